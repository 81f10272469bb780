# shellcheck shell=bash
# The host's packages (apt also needs the guests' architectures' lists),
# and what the bash that is left asks of the kernel tree: its patch files,
# its state, prepare (tools/lib/tree_step.py) and make.

# Packages for the host side (build, KUnit, QEMU, checks).
HOST_PACKAGES="linux-source-6.12 build-essential gcc-arm-linux-gnueabihf
	binutils-arm-linux-gnueabihf flex bison bc libelf-dev libssl-dev cpio
	xz-utils rsync kmod ccache dwarves sparse python3 python3-ply python3-git perl git
	qemu-system-x86 qemu-system-arm shellcheck b4"

do_setup() {
	local missing=() p
	# shellcheck disable=SC2046,SC2086 # lists of words
	for p in $(printf '%s\n' $HOST_PACKAGES $(guest_packages) | sort -u); do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep 'ok installed' >/dev/null ||
			missing+=("$p")
	done
	if [ ${#missing[@]} -eq 0 ]; then
		say "setup: every host package is installed"
		return 0
	fi
	[ "$(id -u)" -eq 0 ] || die "setup must run as root to install: ${missing[*]}"
	say "setup: installing ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt_update
	apt-get install -y -q --no-install-recommends "${missing[@]}" ||
		die "setup: apt-get install failed (see above)"
	guest_setup
}

# The host packages the guests need, to merge into HOST_PACKAGES.
guest_packages() {
	echo qemu-system-x86 qemu-system-arm qemu-system-data cpio gzip \
		gcc libc6-dev gcc-arm-linux-gnueabihf libc6-dev-armhf-cross \
		binutils rsync make
}

# dpkg must know armhf for apt to find the packages of the arm guest.
guest_setup() {
	local darch
	for darch in "${guest_deb_arch[@]}"; do
		guest_apt_ready "$darch"
	done
}

guest_apt_ready() {
	local darch=$1
	if [ "$darch" != "$(dpkg --print-architecture)" ] &&
		! dpkg --print-foreign-architectures | grep -x "$darch" >/dev/null; then
		[ "$(id -u)" -eq 0 ] ||
			die "dpkg does not know the $darch architecture; as root run: dpkg --add-architecture $darch && apt-get update (tools/blkctx setup does it)"
		say "guest: adding the $darch architecture to dpkg"
		dpkg --add-architecture "$darch"
		apt_update
	fi
	if ! apt-cache show --no-all-versions "busybox:$darch" >/dev/null 2>&1; then
		[ "$(id -u)" -eq 0 ] ||
			die "apt has no $darch package lists; as root run: apt-get update"
		say "guest: apt has no $darch package lists, updating them"
		apt_update
	fi
	apt-cache show --no-all-versions "busybox:$darch" >/dev/null 2>&1 ||
		die "guest: apt still has no $darch package lists after apt-get update (see above)"
}

# apt_update: apt-get update, tried three times. A mirror caught syncing
# serves an index that does not match its Release file, and apt then fails
# the whole update for that one index (seen for bookworm-security's armhf
# Packages): after the third try go on with the lists apt has, with a
# warning; a package that is then missing fails where it is installed or
# downloaded.
apt_update() {
	local try
	for try in 1 2 3; do
		apt-get update -q >&2 && return 0
		[ $try -eq 3 ] || {
			say "apt-get update failed (try $try of 3); again in 30 s"
			sleep 30
		}
	done
	say "warning: apt-get update failed three times; going on with the package lists apt has"
}

# arch_list [ARCH...]: the architectures given, or all of them.
arch_list() {
	if [ $# -gt 0 ]; then
		echo "$@"
	else
		echo "$ARCHES"
	fi
}

# Patch files in series order: series/, kunit/, selftests/; the cover letter
# is not a patch. The list and the digests are tools/lib/common.py's, which
# the commands written in Python read too.
patch_files() {
	python3 -B "$LIB/common.py" files "$REPO"
}

patches_digest() {
	python3 -B "$LIB/common.py" digest "$REPO" "$TARBALL"
}

tgit() { git -C "$TREE" "$@"; }
# tree_current: the tree exists and was prepared or exported from the patch
# files as they are now; commits made since in the tree are fine.
tree_current() {
	python3 -B "$LIB/common.py" current "$REPO" "$TREE" "$TARBALL" || exit 1
}

# tree_state: the tree's commit and its uncommitted changes, as a digest; a
# kernel built from the tree records it, and a guest boots only a kernel
# whose record matches the tree as it is now.
tree_state() {
	python3 -B "$LIB/common.py" state "$TREE"
}

# do_prepare [--force]: tools/lib/tree_step.py's prepare, for the commands
# that begin with it (demo, bench, bench-check), which hold the lock.
do_prepare() {
	BLKCTX_CACHE=$CACHE run_child python3 -B "$LIB/tree_step.py" prepare "$@" || exit 1
}

# arch_make_cmd ARCH: make for ARCH in $TREE (common.py's arch_make, which
# the Python commands use) in ARCH_MAKE, for with_progress.
arch_make_cmd() {
	ARCH_MAKE=()
	mapfile -d '' ARCH_MAKE < <(python3 -B "$LIB/common.py" make "$1" "$TREE")
	[ ${#ARCH_MAKE[@]} -gt 0 ] || die "unknown architecture $1"
}
