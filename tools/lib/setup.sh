# shellcheck shell=bash
# setup: the host's packages, and apt's lists of the guests'
# architectures. Bash, as it runs where python3 is not installed yet.

# Packages for the host side (build, KUnit, QEMU, checks); the cross
# compilers come from tools/lib/arches (arch_packages).
HOST_PACKAGES="linux-source-6.12 build-essential flex bison bc libelf-dev libssl-dev cpio
	xz-utils rsync kmod ccache dwarves sparse python3 python3-ply python3-git perl git
	qemu-system-x86 qemu-system-arm shellcheck b4 clang lld llvm"

do_setup() {
	local missing=() p
	# shellcheck disable=SC2046,SC2086 # lists of words
	for p in $(printf '%s\n' $HOST_PACKAGES $(guest_packages) $(arch_packages) | sort -u); do
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
		gcc libc6-dev binutils rsync make
}

# arch_packages: each cross-compiled architecture's compiler, binutils and
# C library (its static selftests), named after its prefix in tools/lib/arches.
arch_packages() {
	local arch cc
	for arch in $ARCHES; do
		cc=${arch_cc[$arch]%-}
		[ -z "$cc" ] || echo "gcc-$cc binutils-$cc libc6-dev-${guest_deb_arch[$arch]}-cross"
	done
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
