#!/usr/bin/env node
// Validates Kubernetes manifests offline against the OpenAPI schemas of Kubernetes 1.27
// that the npm package kubernetes-models (pinned in package-lock.json) carries as data.
//
//   node validate.cjs [--dump] FILE.yaml...
//
// Each YAML document must name an apiVersion and kind kubernetes-models knows (an unknown
// one is an error, never a silent pass).  Two passes per document:
//   1. the package's own validator (ajv over the schema: types, formats such as int32 and
//      quantities, enums, required fields);
//   2. strict fields, as `kubectl apply --validate=strict` and kubeconform -strict do: a
//      field the schema does not declare is an error (a typo such as `readinesProbe` would
//      otherwise pass the schema and, where the API server's field validation is not
//      strict, be dropped).
// YAML is read as 1.1, as Kubernetes reads it (0400 is octal, yes/no are booleans).
// Prints "ok FILE#N KIND/NAME" or "error FILE#N KIND/NAME: PATH: MESSAGE" per document and
// exits 1 when anything failed.  --dump prints instead the parsed documents as one JSON
// array per file, one a line (tests/deploy reads them for the cross-object checks).
"use strict";

const fs = require("fs");
const path = require("path");
const YAML = require("yaml");

// kubernetes-models' schema modules register each schema with @kubernetes-models/validate
// when a model is first validated: keep a copy, the strict pass walks the same schemas.
const validateLib = require("@kubernetes-models/validate");
const schemas = new Map();
const origRegister = validateLib.register;
validateLib.register = function (id, schema) {
  schemas.set(id, schema);
  return origRegister(id, schema);
};
if (validateLib.register === origRegister)
  throw new Error("cannot follow @kubernetes-models/validate's register()");

// A model module exports its class twice: as KIND and as the schema id in Pascal case
// (io.k8s.api.apps.v1.Deployment: IoK8sApiAppsV1Deployment).
function pascal(id) {
  return id.split(/[.-]/).map((p) => p.charAt(0).toUpperCase() + p.slice(1)).join("");
}
function rootId(mod, cls) {
  const names = Object.keys(mod).filter((k) => k !== cls.kind && mod[k] === cls);
  for (const id of schemas.keys())
    if (names.includes(pascal(id)))
      return id;
  return null;
}

function modelFor(apiVersion, kind) {
  if (typeof apiVersion !== "string" || typeof kind !== "string" ||
      !/^[a-z0-9.]+(\/[a-z0-9]+)?$/.test(apiVersion) || !/^[A-Z][A-Za-z0-9]*$/.test(kind))
    return null;
  let mod;
  try {
    mod = require("kubernetes-models/" + apiVersion + "/" + kind);
  } catch (e) {
    return null;
  }
  const cls = mod[kind];
  return typeof cls === "function" && cls.kind === kind && cls.apiVersion === apiVersion
    ? {mod, cls} : null;
}

function resolve(schema) {
  let s = schema;
  for (let i = 0; s && s.$ref && i < 32; i++) {
    const id = s.$ref.replace(/#$/, "");
    s = schemas.get(id);
    if (!s)
      throw new Error("schema " + id + " is not loaded");
  }
  return s;
}

// Every field of data that schema does not declare, as JSON paths.
function unknownFields(schema, data, at, out) {
  const s = resolve(schema);
  if (!s || data === null || data === undefined)
    return;
  for (const key of ["oneOf", "anyOf", "allOf"]) {
    if (Array.isArray(s[key])) {
      // the schemas use oneOf for "this type or null" and int-or-string: walk each object
      // branch (only one of them can match an object)
      for (const alt of s[key]) {
        const r = resolve(alt);
        if (r && (r.properties || r.additionalProperties || r.items || r.$ref))
          unknownFields(r, data, at, out);
      }
    }
  }
  if (Array.isArray(data)) {
    if (s.items)
      data.forEach((v, i) => unknownFields(s.items, v, at + "/" + i, out));
    return;
  }
  if (typeof data !== "object")
    return;
  if (s.properties) {
    for (const k of Object.keys(data)) {
      if (Object.prototype.hasOwnProperty.call(s.properties, k))
        unknownFields(s.properties[k], data[k], at + "/" + k, out);
      else if (s.additionalProperties && typeof s.additionalProperties === "object")
        unknownFields(s.additionalProperties, data[k], at + "/" + k, out);
      else if (s.additionalProperties !== true)
        out.push(at + "/" + k + ": unknown field \"" + k + "\"");
    }
  } else if (s.additionalProperties && typeof s.additionalProperties === "object") {
    for (const k of Object.keys(data))
      unknownFields(s.additionalProperties, data[k], at + "/" + k, out);
  }
}

function checkDoc(doc) {
  if (!doc || typeof doc !== "object" || Array.isArray(doc))
    return ["document is not a mapping"];
  const model = modelFor(doc.apiVersion, doc.kind);
  if (!model)
    return ["unknown apiVersion/kind " + JSON.stringify(doc.apiVersion) + "/" +
            JSON.stringify(doc.kind) + " (not in the Kubernetes 1.27 schemas)"];
  const errors = [];
  try {
    new model.cls(doc).validate();
  } catch (e) {
    if (Array.isArray(e.errors) && e.errors.length) {
      for (const x of e.errors)
        errors.push((x.instancePath || "/") + ": " + x.message +
                    (x.params && x.params.allowedValues
                      ? " " + JSON.stringify(x.params.allowedValues) : ""));
    } else {
      errors.push(String(e.message || e));
    }
  }
  const id = rootId(model.mod, model.cls);
  if (!id || !schemas.has(id))
    errors.push("no schema registered for " + doc.apiVersion + "/" + doc.kind);
  else
    unknownFields(schemas.get(id), doc, "", errors);
  return errors;
}

function main(argv) {
  const dump = argv[0] === "--dump";
  const files = dump ? argv.slice(1) : argv;
  if (!files.length) {
    process.stderr.write("usage: node validate.cjs [--dump] FILE.yaml...\n");
    return 2;
  }
  let failed = 0;
  for (const file of files) {
    const label = path.relative(process.cwd(), file) || file;
    let docs;
    try {
      docs = YAML.parseAllDocuments(fs.readFileSync(file, "utf8"),
                                   {uniqueKeys: true, version: "1.1"});
    } catch (e) {
      console.log("error " + label + ": " + e.message);
      failed++;
      continue;
    }
    const values = [];
    docs.forEach((d, i) => {
      if (d.errors.length) {
        console.log("error " + label + "#" + (i + 1) + ": YAML: " +
                    d.errors.map((e) => e.message.split("\n")[0]).join("; "));
        failed++;
        return;
      }
      const v = d.toJS();
      if (v === null)
        return;     // an empty document (a trailing ---)
      values.push(v);
      if (dump)
        return;
      const name = (v && v.kind) + "/" + (v && v.metadata && v.metadata.name);
      const errs = checkDoc(v);
      if (errs.length) {
        failed++;
        for (const e of errs)
          console.log("error " + label + "#" + (i + 1) + " " + name + ": " + e);
      } else {
        console.log("ok " + label + "#" + (i + 1) + " " + name);
      }
    });
    if (dump)
      console.log(JSON.stringify(values));
  }
  return failed ? 1 : 0;
}

process.exitCode = main(process.argv.slice(2));
