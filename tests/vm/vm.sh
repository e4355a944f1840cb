#!/bin/sh
# A Debian 12 virtual machine as our users have it: systemd as PID 1, pure cgroup v2
# (cpu memory pids at the root, nsdelegate), the stock 6.1 kernel (Landlock ABI 2), a
# user with a systemd login session, podman.  The real-host tests (tests/vm/test_vm.py)
# run govex there; a developer can too:
#
#   tests/vm/vm.sh image            make the disk from Debian's mirror (mmdebstrap; as root;
#                                   ~3 minutes here), unless one made by this script is there
#   tests/vm/vm.sh start            boot a throw-away overlay of it (qemu; waits for ssh)
#   tests/vm/vm.sh ssh [-u USER] CMD...   run CMD in a login shell (root, or USER: "govex"
#                                   is a user with a login session: its own user@UID.service)
#   tests/vm/vm.sh put SRC DEST     copy a file or directory in (tar over ssh)
#   tests/vm/vm.sh stop             power off; the qemu process is ended by its PID
#   tests/vm/vm.sh status
#
# State (disk, key, console log) goes to $VM_STATE (default /var/tmp/govex-vm: kept across
# runs, so the disk is made once per version of this script).  ssh is forwarded to
# 127.0.0.1:${VM_SSH_PORT:-2232}; concurrent VMs need their own port and state.
# Accelerator: TCG.  /dev/kvm on the project's machines is a PVM hypervisor, which boots
# only PVM guest kernels (a stock kernel hangs under -enable-kvm); where ordinary KVM
# exists, VM_ACCEL=kvm.  Under TCG the guest is many times slower than the host: the
# tests build govex on the host (the same Debian 12 userland) and copy the build in.
# The guest reaches Debian's mirror through qemu's user-mode network, and nothing else.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
state=${VM_STATE:-/var/tmp/govex-vm}
img="$state/img"
port=${VM_SSH_PORT:-2232}
key="$img/id_ed25519"
pidf="$state/qemu.pid"
mkdir -p "$state"

# What the disk holds besides a minimal Debian: govex's run-time libraries and those of
# its sanitized test build, the interpreter, what the suites call, podman, and Debian's
# data stack (integration/test_packages.py: strict with python.site as the login user).
pkgs=systemd-sysv,linux-image-amd64,sudo,ca-certificates,openssh-server,libpam-systemd
pkgs=$pkgs,dbus-user-session,iproute2,procps,less,attr,python3,libjansson4,libssl3
pkgs=$pkgs,libseccomp2,libmicrohttpd12,libhttp-parser2.9,libsubunit0,libasan8,libubsan1,util-linux
pkgs=$pkgs,podman,crun,uidmap,slirp4netns,fuse-overlayfs,netavark,aardvark-dns,iptables,curl
pkgs=$pkgs,python3-numpy,python3-pandas,python3-matplotlib,python3-venv

# the disk is made again when this script's recipe changes
recipe=$(sed -n '/^pkgs=/p;/^make_image()/,/^}/p' "$0" | sha256sum | cut -c1-16)

ssh_opts() {
	echo "-i $key -p $port -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null" \
	     "-o LogLevel=ERROR -o ConnectTimeout=5 -o ServerAliveInterval=15 -o BatchMode=yes"
}

mirrors() {
	grep -hE '^(URIs:|deb )' /etc/apt/sources.list /etc/apt/sources.list.d/*.list \
		/etc/apt/sources.list.d/*.sources 2>/dev/null |
		sed -E 's/^URIs:[[:space:]]*//; s/^deb (\[[^]]*\] )?//; s/[[:space:]].*//' | sort -u
}

make_image() {
	command -v mmdebstrap >/dev/null || { echo "vm: mmdebstrap is missing" >&2; exit 3; }
	command -v qemu-img >/dev/null || { echo "vm: qemu-img is missing" >&2; exit 3; }
	scratch="$state/rootfs"
	rm -rf "$scratch" "$img.new"
	mkdir -p "$img.new"
	ssh-keygen -q -t ed25519 -N '' -C govex-vm -f "$img.new/id_ed25519"
	pub=$(cat "$img.new/id_ed25519.pub")
	main=$(mirrors | grep -v security | head -n 1)
	sec=$(mirrors | grep security | head -n 1)
	[ -n "$main" ] || { echo "vm: no Debian mirror in this host's apt sources" >&2; exit 3; }
	[ -n "$sec" ] || sec=$main
	# the login user "govex" (uid 1000) gets the same key; its session starts its
	# user@1000.service as any ssh login does (pam_systemd)
	mmdebstrap --mode=root --variant=important --include="$pkgs" \
	  --customize-hook='echo govex-vm > "$1/etc/hostname"' \
	  --customize-hook='printf "127.0.0.1 localhost\n127.0.1.1 govex-vm\n" > "$1/etc/hosts"' \
	  --customize-hook='printf "/dev/vda / ext4 defaults,errors=remount-ro 0 1\n" > "$1/etc/fstab"' \
	  --customize-hook='mkdir -p "$1/etc/systemd/network" && printf "[Match]\nName=en*\n\n[Network]\nDHCP=yes\n" > "$1/etc/systemd/network/10-dhcp.network"' \
	  --customize-hook='chroot "$1" systemctl enable systemd-networkd ssh' \
	  --customize-hook='rm -f "$1/etc/resolv.conf"; echo "nameserver 10.0.2.3" > "$1/etc/resolv.conf"' \
	  --customize-hook='chroot "$1" useradd -m -u 1000 -s /bin/bash govex' \
	  --customize-hook="for h in root home/govex; do mkdir -p \"\$1/\$h/.ssh\" && echo '$pub' > \"\$1/\$h/.ssh/authorized_keys\" && chmod 700 \"\$1/\$h/.ssh\" && chmod 600 \"\$1/\$h/.ssh/authorized_keys\"; done; chroot \"\$1\" chown -R govex:govex /home/govex/.ssh" \
	  --customize-hook='rm -f "$1"/etc/ssh/ssh_host_*; chroot "$1" ssh-keygen -A' \
	  --customize-hook='cp -L "$1"/boot/vmlinuz-* '"$img.new"'/vmlinuz && cp -L "$1"/boot/initrd.img-* '"$img.new"'/initrd.img' \
	  bookworm "$scratch" \
	  "deb $main bookworm main" "deb $main bookworm-updates main" "deb $sec bookworm-security main"
	truncate -s 12G "$img.new/base.raw"
	mkfs.ext4 -q -L govexroot -d "$scratch" "$img.new/base.raw"
	qemu-img convert -f raw -O qcow2 "$img.new/base.raw" "$img.new/base.qcow2"
	rm -f "$img.new/base.raw"
	rm -rf "$scratch"
	echo "$recipe" > "$img.new/recipe"
	rm -rf "$img"
	mv "$img.new" "$img"
}

running() { [ -f "$pidf" ] && kill -0 "$(cat "$pidf")" 2>/dev/null; }

vssh() {
	user=root
	if [ "${1:-}" = "-u" ]; then user=$2; shift 2; fi
	q="'$(printf '%s' "$*" | sed "s/'/'\\\\''/g")'"
	# shellcheck disable=SC2046
	ssh $(ssh_opts) "$user@127.0.0.1" "bash -lc $q"
}

case "${1:-}" in
image)
	# one maker at a time: .ci/run starts one in the background early (its downloads
	# overlap the builds and the host's suites), and test_vm.py's own call waits for it
	exec 9>"$state/image.lock"
	flock 9
	if [ -f "$img/recipe" ] && [ "$(cat "$img/recipe")" = "$recipe" ] && [ -f "$img/base.qcow2" ]; then
		echo "vm: image $recipe is there"
	else
		make_image
		echo "vm: image $recipe made"
	fi ;;
start)
	if running; then echo "vm: already running (pid $(cat "$pidf"))"; exit 0; fi
	command -v qemu-system-x86_64 >/dev/null || { echo "vm: qemu-system-x86_64 is missing" >&2; exit 3; }
	accel=${VM_ACCEL:-tcg}
	if [ "$accel" = kvm ]; then
		set -- -enable-kvm -cpu "${VM_CPU:-host,-arch-capabilities}"
	else
		set -- -accel tcg,thread=multi,tb-size=512 -cpu "${VM_CPU:-max}"
	fi
	rm -f "$state/run.qcow2"
	qemu-img create -q -f qcow2 -F qcow2 -b "$img/base.qcow2" "$state/run.qcow2"
	qemu-system-x86_64 "$@" -smp "${VM_CPUS:-2}" -m "${VM_MEMORY:-4G}" \
		-kernel "$img/vmlinuz" -initrd "$img/initrd.img" \
		-append "root=/dev/vda rw console=ttyS0" \
		-drive "file=$state/run.qcow2,if=virtio,format=qcow2" \
		-netdev "user,id=n0,hostfwd=tcp:127.0.0.1:$port-:22" \
		-device virtio-net-pci,netdev=n0 \
		-display none -serial "file:$state/console.log" -monitor none \
		-pidfile "$pidf" -daemonize
	i=0
	until vssh true 2>/dev/null; do
		i=$((i + 1))
		[ $i -lt 200 ] || { echo "vm: no ssh after 200 tries; see $state/console.log" >&2; exit 1; }
		sleep 2
	done
	echo "vm: up (qemu pid $(cat "$pidf"), ssh 127.0.0.1:$port)" ;;
ssh) shift; vssh "$@" ;;
put)
	# put SRC DEST: SRC (file or directory) becomes DEST in the guest
	src=$2 dest=$3
	# shellcheck disable=SC2046
	tar -C "$(dirname "$src")" -cf - "$(basename "$src")" |
		ssh $(ssh_opts) root@127.0.0.1 "mkdir -p '$(dirname "$dest")' && tar -C '$(dirname "$dest")' -xf - && { [ '$(basename "$src")' = '$(basename "$dest")' ] || mv '$(dirname "$dest")/$(basename "$src")' '$dest'; }" ;;
stop)
	if ! running; then echo "vm: not running"; exit 0; fi
	pid=$(cat "$pidf")
	vssh "systemctl poweroff" >/dev/null 2>&1 || true
	i=0
	while kill -0 "$pid" 2>/dev/null && [ $i -lt 60 ]; do sleep 1; i=$((i + 1)); done
	if kill -0 "$pid" 2>/dev/null; then kill "$pid"; fi
	rm -f "$pidf" "$state/run.qcow2"
	echo "vm: stopped" ;;
status) if running; then echo "vm: running (pid $(cat "$pidf"))"; else echo "vm: not running"; fi ;;
*) sed -n '2,23p' "$0"; exit 2 ;;
esac
