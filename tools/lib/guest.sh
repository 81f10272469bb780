# shellcheck shell=bash
# Kselftests in QEMU guests: a small root from Debian's packages of the
# guest's architecture, the selftests built statically by kselftest's make,
# an /init that runs them as KTAP and stops the guest, the boot under plain
# emulation with a timeout, and the count.
#
# Everything lives in $GUEST_DIR/ARCH:
#   debs/, resolved, root/   the guest root (tools/lib/guest_root.py)
#   ksft/      the kernel's UAPI headers and the kselftest objects (make O=)
#   src/       $TREE seen through symlinks, with out-of-tree targets added
#   initramfs.cpio.gz
# The console of the last boot is $BUILD/selftests-ARCH.log (see GUEST_LOG_SUFFIX).
#
# Settings (BLKCTX_SELFTEST*, BLKCTX_GUEST_*): tools/blkctx selftests --help.
# GUEST_LOG_SUFFIX, set by callers: the console goes to
# $BUILD/selftests-ARCH$SUFFIX.log.

GUEST_DIR=$CACHE/guest
# /init prints this line last; without it the guest crashed or hung.
GUEST_SENTINEL="blkctx-guest: selftests finished"
# The kernel build to boot: $BUILD/$GUEST_BUILD-ARCH (kunit, or guest).
GUEST_BUILD=${BLKCTX_GUEST_BUILD:-kunit}
# Seconds before a guest that has not stopped is killed.
GUEST_TIMEOUT=${BLKCTX_GUEST_TIMEOUT:-900}
# Seconds one test may run in the guest unless its settings file says.
GUEST_TEST_TIMEOUT=${BLKCTX_GUEST_TEST_TIMEOUT:-120}

# Options every guest needs in its kernel, on top of what boots KUnit (and
# of each architecture's own, in tools/lib/arches).
GUEST_KCONFIG="BLK_DEV_INITRD RD_GZIP DEVTMPFS TMPFS PROC_FS SYSFS DEBUG_FS
	BINFMT_ELF BINFMT_SCRIPT"

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

# guest_rootfs ARCH: the guest root in $GUEST_DIR/ARCH/root, from Debian's
# packages of the architecture (tools/lib/guest_root.py), once apt has
# their lists.
guest_rootfs() {
	local arch=$1
	[ -n "${guest_deb_arch[$arch]:-}" ] || die "guest: unknown architecture $arch"
	guest_apt_ready "${guest_deb_arch[$arch]}"
	BLKCTX_CACHE=$CACHE run_child python3 -B "$LIB/guest_root.py" root "$arch" "$GUEST_DIR" ||
		exit 1
}

# guest_targets: the selftest targets as "name dir" lines. A target is a
# directory of $TREE/tools/testing/selftests, NAME=DIR, or a DIR whose name
# becomes the collection.
guest_targets() {
	local t name dir
	for t in ${BLKCTX_SELFTEST_TARGETS:-block mmc}; do
		case $t in
		*=*) name=${t%%=*} dir=${t#*=} ;;
		*/*) dir=$t name=$(basename "$t") ;;
		*) name=$t dir=$TREE/tools/testing/selftests/$t ;;
		esac
		[ -f "$dir/Makefile" ] || die "guest: selftest target $t: no Makefile in $dir"
		echo "$name $(cd "$dir" && pwd)"
	done
}

# guest_src ARCH: $GUEST_DIR/ARCH/src, $TREE seen through symlinks down to
# tools/testing/selftests, where each out-of-tree target is copied, so that
# kselftest's own Makefiles build it as if it were in the tree. Prints
# nothing: the selftests are in $GUEST_DIR/ARCH/src/tools/testing/selftests.
guest_src() {
	local arch=$1 src=$GUEST_DIR/$1/src name dir rel e f
	rm -rf "$src"
	mkdir -p "$src"
	rel=.
	for e in tools testing selftests; do
		for f in "$TREE/$rel"/* "$TREE/$rel"/.[!.]*; do
			[ -e "$f" ] || continue
			[ "$(basename "$f")" = "$e" ] && continue
			ln -s "$f" "$src/$rel/$(basename "$f")"
		done
		rel=$rel/$e
		mkdir -p "$src/$rel"
	done
	for f in "$TREE/$rel"/*; do
		ln -s "$f" "$src/$rel/$(basename "$f")"
	done
	while read -r name dir; do
		case $dir in
		"$TREE/tools/testing/selftests/$name") ;;
		*)
			say "guest: selftest target $name from $dir (not in the tree)"
			rm -f "$src/$rel/$name"
			cp -r "$dir" "$src/$rel/$name" || die "guest: cannot copy $dir"
			;;
		esac
	done < <(guest_targets)
}

# guest_selftests ARCH DEST: build the targets statically with kselftest's
# make and install them in DEST with kselftest-list.txt.
guest_selftests() {
	local arch=$1 dest=$2 ksft=$GUEST_DIR/$1/ksft selftests targets="" name dir
	local -a kmake=(make -C "$TREE" O="$ksft" ARCH="$arch")
	local -a smake=(CC="${arch_cc[$arch]}gcc" USERLDFLAGS=-static -j"$JOBS")
	# a native build leaves ARCH to each Makefile, as "make -C
	# tools/testing/selftests" does; a cross build names it
	[ -z "${arch_cc[$arch]}" ] || {
		kmake+=(CROSS_COMPILE="${arch_cc[$arch]}")
		smake+=(ARCH="$arch" CROSS_COMPILE="${arch_cc[$arch]}")
	}
	mkdir -p "$ksft"
	# kselftest includes the UAPI headers of the tree from $O/usr/include
	"${kmake[@]}" -s headers_install >"$ksft/headers.log" 2>&1 ||
		{ tail -20 "$ksft/headers.log" >&2; die "guest: headers_install for $arch failed"; }
	# here, where its die stops the command, before its use in <(...)
	guest_targets >/dev/null
	while read -r name dir; do
		targets+=" $name"
	done < <(guest_targets)
	guest_src "$arch"
	selftests=$GUEST_DIR/$arch/src/tools/testing/selftests
	rm -rf "$dest" "$ksft/kselftest"
	# shellcheck disable=SC2086
	if ! make -C "$selftests" O="$ksft" "${smake[@]}" TARGETS="${targets# }" \
		KSFT_INSTALL_PATH="$dest" install >"$ksft/build.log" 2>&1; then
		tail -30 "$ksft/build.log" >&2
		die "guest: building the selftests ($targets) for $arch failed; log: $ksft/build.log"
	fi
	grep -E 'warning:' "$ksft/build.log" >&2 || true
	[ -s "$dest/kselftest-list.txt" ] || die "guest: the selftests ($targets) list no test"
}

# The guest's /init (tools/guest/init, a POSIX sh script for busybox): mount
# what tests use, run each test of
# /kselftest/kselftest-list.txt (or those blkctx.tests= selects, by
# "collection", "collection:test" or a glob of these, comma-separated) as a
# KTAP subtest, print the sentinel and reset (which ends qemu -no-reboot).
guest_init() {
	cat "$REPO/tools/guest/init"
}

# guest_initramfs ARCH OUT: the root, the selftests and /init as a gzip
# newc cpio in OUT.
guest_initramfs() {
	local arch=$1 out=$2 stage=$GUEST_DIR/$1/initramfs.d
	guest_rootfs "$arch"
	rm -rf "$stage"
	mkdir -p "$stage"
	cp -a "$GUEST_DIR/$arch/root/." "$stage/" || die "guest: cannot copy the root"
	guest_selftests "$arch" "$stage/kselftest"
	guest_init | sed -e "s|@TEST_TIMEOUT@|$GUEST_TEST_TIMEOUT|" \
		-e "s|@SENTINEL@|$GUEST_SENTINEL|" >"$stage/init" ||
		die "guest: cannot write $stage/init"
	# a truncated /init would look like a guest that crashed
	if ! grep -qxF "echo \"$GUEST_SENTINEL\"" "$stage/init" ||
		[ "$(tail -1 "$stage/init")" != "reboot -f" ]; then
		die "guest: $stage/init is incomplete"
	fi
	chmod 755 "$stage/init"
	mkdir -p "$(dirname "$out")"
	(set -o pipefail && cd "$stage" && find . -mindepth 1 | LC_ALL=C sort |
		cpio -o -H newc -R 0:0 --quiet | gzip -9n) >"$out.tmp" ||
		die "guest: cannot pack $out"
	mv "$out.tmp" "$out"
	say "guest: $arch initramfs $out: $(du -h "$out" | cut -f1), $(grep -c . "$stage/kselftest/kselftest-list.txt") tests"
	rm -rf "$stage"
}

# guest_boot ARCH KERNEL INITRAMFS LOG: boot under plain emulation with the
# console in LOG (tools/lib/guest.py boot). Returns qemu's status, 124 when
# the guest was stopped after $GUEST_TIMEOUT seconds.
guest_boot() {
	local arch=$1 kernel=$2 initrd=$3 log=$4 rc=0
	# a task blocked for a minute is a hang the console shows (guest.py judge)
	local append="kunit.enable=0 panic=-1 sysctl.kernel.hung_task_timeout_secs=60"
	# eMMC contexts are opt-in: the guests turn them on unless told not to
	append+=" mmc_core.contexts=${BLKCTX_GUEST_CONTEXTS:-1}"
	append+=" ${BLKCTX_GUEST_APPEND:-}"
	[ -z "${BLKCTX_SELFTESTS:-}" ] || append+=" blkctx.tests=$BLKCTX_SELFTESTS"
	# a boot that fails before QEMU starts leaves no earlier boot's log
	rm -f "$log"
	run_child python3 -B "$REPO/tools/lib/guest.py" boot --arch "$arch" --tree "$TREE" \
		--config "$REPO/qemu_configs/$arch.py" --kernel "$kernel" --initrd "$initrd" \
		--append "$append" --log "$log" --timeout "$GUEST_TIMEOUT" || rc=$?
	return $rc
}

# guest_check_kconfig CONFIG ARCH DIR...: the options missing from the kernel
# .config CONFIG that an ARCH guest needs, or that a target DIR's "config"
# file (kselftest's list of the options its tests need) asks for.
guest_check_kconfig() {
	local config=$1 arch=$2 o f missing=""
	shift 2
	for o in $GUEST_KCONFIG ${guest_arch_kconfig[$arch]}; do
		grep -q "^CONFIG_$o=y" "$config" || missing+=" CONFIG_$o=y"
	done
	for f in "$@"; do
		[ -f "$f/config" ] || continue
		while IFS= read -r o; do
			case $o in CONFIG_*=*) grep -qx "$o" "$config" || missing+=" $o" ;; esac
		done <"$f/config"
	done
	echo "${missing# }"
}

# guest_judge ARCH LOG STATUS: count the console LOG of a boot that qemu
# ended with STATUS into GUEST_P, GUEST_F and GUEST_S (tools/lib/guest.py
# judge says how, and why a boot failed).
guest_judge() {
	local out
	if ! out=$(python3 -B "$REPO/tools/lib/guest.py" judge --arch "$1" --tree "$TREE" \
		--timeout "$GUEST_TIMEOUT" --sentinel "$GUEST_SENTINEL" "$2" "$3") ||
		! [[ $out =~ ^[0-9]+\ [0-9]+\ [0-9]+$ ]]; then
		say "selftests: $1: tools/lib/guest.py could not judge $2"
		out="0 1 0"
	fi
	read -r GUEST_P GUEST_F GUEST_S <<<"$out"
}

GUEST_PASSED=0
GUEST_FAILED=0
GUEST_SKIPPED=0
GUEST_ARCH_OK=0

# guest_count PASSED FAILED SKIPPED: add one boot's counts to the totals, and
# report them to a "tools/blkctx test" that runs this.
guest_count() {
	GUEST_PASSED=$((GUEST_PASSED + $1))
	GUEST_FAILED=$((GUEST_FAILED + $2))
	GUEST_SKIPPED=$((GUEST_SKIPPED + $3))
	report_counts selftests "$@"
}

# guest_qemu_params ARCH: qemu_configs/ARCH.py through the tree's kunit.py
# loader, one value a line: binary, kernel image, console, serial, extras.
guest_qemu_params() {
	# plain emulation always, whatever KUnit was asked for; -B: no
	# __pycache__ left in qemu_configs/ or the tree
	env -u BLKCTX_KVM python3 -B "$REPO/tools/lib/qemu_params.py" "$TREE" "$REPO/qemu_configs/$1.py"
}

# guest_arch ARCH: build the initramfs, boot, count; add to the totals and
# set GUEST_ARCH_OK. It returns 0 even on failure, so that "set -e" keeps
# applying inside: a caller's "guest_arch || ..." would switch it off.
# GUEST_INITRD: boot this initramfs instead of building one;
# GUEST_INITRD_SAVE: copy the one built there (a file of the caller's own,
# as the next run of the shared cache may rebuild the cache's copy).
guest_arch() {
	local arch=$1 kdir=$BUILD/$GUEST_BUILD-$1
	local log=$BUILD/selftests-$1${GUEST_LOG_SUFFIX:-}.log
	local initrd=${GUEST_INITRD:-$GUEST_DIR/$1/initramfs.cpio.gz} kernel missing
	local rc=0 start p f s t0 lock state
	local -a dirs
	GUEST_ARCH_OK=0
	if ! kernel=$(guest_qemu_params "$arch"); then
		say "selftests: $arch: cannot read qemu_configs/$arch.py through the tree's kunit_kernel"
		guest_count 0 1 0
		return 0
	fi
	kernel=$kdir/$(printf '%s\n' "$kernel" | sed -n 2p)
	t0=$(date +%s)
	if [ ! -f "$kernel" ]; then
		say "selftests: $arch: no kernel $kernel (tools/blkctx kunit $arch builds it)"
		guest_count 0 1 0
		return 0
	fi
	# an unreadable tree has no state: then no kernel matches it
	if [ "$GUEST_BUILD" = kunit ] &&
		{ ! state=$(tree_state) || [ -z "$state" ] ||
			[ "$(cat "$kdir/.blkctx-tree" 2>/dev/null)" != "$state" ]; }; then
		say "selftests: $arch: $kernel was not built from the tree as it is now (tools/blkctx kunit $arch builds it)"
		guest_count 0 1 0
		return 0
	fi
	# here, where its die stops the command, before its use in <(...)
	guest_targets >/dev/null
	mapfile -t dirs < <(guest_targets | cut -d' ' -f2-)
	missing=$(guest_check_kconfig "$kdir/.config" "$arch" "${dirs[@]}")
	if [ -n "$missing" ]; then
		say "selftests: $arch: $kdir/.config lacks $missing (add them to kunitconfig, or qemu_configs/$arch.py for one architecture, and run tools/blkctx kunit $arch)"
		guest_count 0 1 0
		return 0
	fi
	# one run per architecture at a time: the machine's users share $CACHE
	mkdir -p "$GUEST_DIR"
	exec {lock}>"$GUEST_DIR/$arch.lock"
	flock "$lock" || die "guest: cannot lock $GUEST_DIR/$arch.lock"
	if [ -z "${GUEST_INITRD:-}" ]; then
		guest_initramfs "$arch" "$initrd"
		[ -z "${GUEST_INITRD_SAVE:-}" ] || cp "$initrd" "$GUEST_INITRD_SAVE"
	fi
	start=$(date +%s)
	say "selftests: booting $arch (log: $log, timeout ${GUEST_TIMEOUT}s)"
	guest_boot "$arch" "$kernel" "$initrd" "$log" || rc=$?
	guest_judge "$arch" "$log" "$rc"
	p=$GUEST_P f=$GUEST_F s=$GUEST_S
	# the log read, the next run may boot
	exec {lock}>&-
	echo "selftests: $arch: $p passed, $f failed, $s skipped (initramfs $((start - t0))s, boot and run $(($(date +%s) - start))s)"
	guest_count "$p" "$f" "$s"
	[ "$f" -ne 0 ] || GUEST_ARCH_OK=1
}
