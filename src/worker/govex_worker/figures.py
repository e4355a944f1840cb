# SPDX-License-Identifier: MIT
# govex worker: matplotlib: a backend without a display, and a snippet's figures as PNG
# outputs.
#
# Never imported here: a snippet that imports matplotlib.pyplot has its show() replaced
# (by _Figures, a meta path finder that only watches that one import and leaves
# sys.meta_path at once) with one that writes each open figure to GOVEX_OUTPUT_DIR as
# figure-N.png and closes it, as a notebook's inline backend does; the figures still
# open when the snippet ends are written the same way.  Those files come back as the
# run's other outputs do (the MCP server sends them as image content).
import os
import sys

from govex_worker.frames import type_name

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, List, Optional

MPL_BACKEND = "Agg"


def mpl_backend() -> None:
    """MPLBACKEND=Agg unless the run's environment names a backend: matplotlib then never
    looks for a display or a GUI toolkit (Debian's /etc/matplotlibrc names TkAgg), in
    this process and in the programs it starts."""
    try:
        if not os.environ.get("MPLBACKEND"):
            os.environ["MPLBACKEND"] = MPL_BACKEND
    except BaseException:
        pass


class _Figures(object):
    """A snippet's figures: where they go (the output directory named when the snippet
    started) and how many were written."""

    def __init__(self, outdir: str) -> None:
        self.outdir = outdir
        self.n = 0
        self.watching = False

    # the meta path finder: answers no import; matplotlib.pyplot's own finder's loader
    # gets an exec_module that patches the module once its code has run
    def find_spec(self, name: str, path: "Any" = None, target: "Any" = None) -> "Any":
        if name != "matplotlib.pyplot":
            return None
        self.unwatch()
        spec = None
        for finder in list(sys.meta_path):
            find = getattr(finder, "find_spec", None)
            if find is None:
                continue
            spec = find(name, path, target)
            if spec is not None:
                break
        loader = getattr(spec, "loader", None)  # type: Any
        real = getattr(loader, "exec_module", None)  # type: Any
        if real is None:
            return spec
        figures = self

        def exec_module(module: "Any") -> "Any":
            if getattr(module, "__name__", None) != name:
                return real(module)
            try:
                del loader.exec_module
            except BaseException:
                pass
            real(module)
            figures.patch(module)
            return None
        try:
            loader.exec_module = exec_module
        except BaseException:
            pass
        return spec

    def watch(self) -> None:
        sys.meta_path.insert(0, self)
        self.watching = True

    def unwatch(self) -> None:
        if self.watching:
            self.watching = False
            try:
                sys.meta_path.remove(self)
            except ValueError:
                pass

    def patch(self, plt: "Any") -> None:
        """plt.show: the open figures written and closed (no window to show them in)."""
        real = getattr(plt, "show", None)
        if not callable(real) or getattr(real, "_govex_figures", False):
            return
        figures = self

        def show(*args: "Any", **kwargs: "Any") -> None:
            figures.save(plt)
        show.__name__ = "show"
        show.__qualname__ = "show"
        show.__doc__ = getattr(real, "__doc__", None)
        show.__wrapped__ = real  # type: ignore[attr-defined]
        show._govex_figures = True  # type: ignore[attr-defined]
        plt.show = show

    def save(self, plt: "Any") -> None:
        """Writes each open figure as figure-N.png (a name no file has: N counts on past
        one there), then closes them all; a figure that cannot be written is said on
        stderr and the run goes on."""
        try:
            nums = list(plt.get_fignums())
        except BaseException:
            return
        for num in nums:
            try:
                fig = plt.figure(num)
                while True:
                    self.n += 1
                    path = os.path.join(self.outdir, "figure-%d.png" % self.n)
                    try:
                        f = open(path, "xb")
                        break
                    except FileExistsError:
                        continue
                with f:
                    fig.savefig(f, format="png")
            except BaseException as e:
                try:
                    sys.stderr.write("govex: figure %r was not written: %s: %s\n"
                                     % (num, type_name(e) or "Exception", e))
                except BaseException:
                    pass
        try:
            plt.close("all")
        except BaseException:
            pass


def figures_start() -> "Optional[_Figures]":
    """The snippet's _Figures when it has an output directory (None without one):
    pyplot patched now when it is imported already (a warm template's preload), else
    watched for."""
    outdir = os.environ.get("GOVEX_OUTPUT_DIR")
    if not outdir:
        return None
    figures = _Figures(outdir)
    plt = sys.modules.get("matplotlib.pyplot")
    if plt is not None:
        figures.patch(plt)
    else:
        figures.watch()
    return figures


def figures_end(figures: "Optional[_Figures]") -> None:
    """At the snippet's end: the figures it left open are written too."""
    if figures is None:
        return
    figures.unwatch()
    plt = sys.modules.get("matplotlib.pyplot")
    if plt is not None:
        figures.save(plt)
