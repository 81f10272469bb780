# shellcheck shell=bash
# KUnit through the tree's own kunit.py, one build directory per architecture.

declare -A arch_cc=([x86_64]="" [arm]="arm-linux-gnueabihf-")

kunit_args() {
	local arch=$1
	echo --arch="$arch" --kunitconfig="$REPO/kunitconfig" \
		--qemu_config="$REPO/qemu_configs/$arch.py" \
		--build_dir="$BUILD/kunit-$arch"
	[ -z "${arch_cc[$arch]}" ] || echo --cross_compile="${arch_cc[$arch]}"
}

kunit_py() {
	local arch=$1 sub=$2
	local -a jobs=()
	shift 2
	# only run and build take --jobs
	case $sub in run | build) jobs=(--jobs="$JOBS") ;; esac
	mkdir -p "$BUILD/kunit-$arch"
	# shellcheck disable=SC2046
	(cd "$TREE" && python3 tools/testing/kunit/kunit.py "$sub" $(kunit_args "$arch") \
		"${jobs[@]}" --make_options "CC=ccache ${arch_cc[$arch]}gcc" "$@")
}

# kunit_config ARCH FILE: the .config kunit.py builds for ARCH, made again
# when kunitconfig or the QEMU config is newer.
kunit_config() {
	local arch=$1 file=$2 config=$BUILD/kunit-$1/.config
	if [ ! -f "$config" ] || [ "$REPO/kunitconfig" -nt "$config" ] ||
		[ "$REPO/qemu_configs/$arch.py" -nt "$config" ]; then
		kunit_py "$arch" config >/dev/null
	fi
	cp "$config" "$file"
}

KUNIT_PASSED=0
KUNIT_FAILED=0
KUNIT_SKIPPED=0

# Run every suite on one architecture and add its counts to the totals.
kunit_arch() {
	local arch=$1
	local log=$BUILD/kunit-$arch.log rc=0 summary
	say "kunit: $arch (log: $log)"
	mkdir -p "$BUILD"
	kunit_py "$arch" run 2>&1 | tee "$log" || rc=$?
	summary=$(sed -n 's/.*Ran \([0-9]*\) tests: \(.*\)/\2/p' "$log" | tail -1)
	local passed failed skipped
	passed=$(sed -n 's/.*passed: \([0-9]*\).*/\1/p' <<<"$summary")
	failed=$(sed -n 's/.*failed: \([0-9]*\).*/\1/p' <<<"$summary")
	skipped=$(sed -n 's/.*skipped: \([0-9]*\).*/\1/p' <<<"$summary")
	if [ -z "$summary" ] || [ "${passed:-0}" -eq 0 ]; then
		say "kunit: $arch ran no test"
		KUNIT_FAILED=$((KUNIT_FAILED + 1))
		return 1
	fi
	KUNIT_PASSED=$((KUNIT_PASSED + ${passed:-0}))
	KUNIT_FAILED=$((KUNIT_FAILED + ${failed:-0}))
	KUNIT_SKIPPED=$((KUNIT_SKIPPED + ${skipped:-0}))
	[ "$rc" -eq 0 ] && [ "${failed:-0}" -eq 0 ]
}

do_kunit() {
	local arch rc=0
	[ -d "$TREE/.git" ] || die "no tree: run tools/blkctx prepare"
	for arch in $(arch_list "$@"); do
		kunit_arch "$arch" || rc=1
	done
	echo "kunit: $KUNIT_PASSED passed, $KUNIT_FAILED failed, $KUNIT_SKIPPED skipped"
	return $rc
}

# Boot each architecture's KUnit kernel twice: with the emulated card's
# contexts, and without them (mmc_emu.max_context_id=0), where the tests
# that need contexts skip and the one for a card without them runs.
do_selftests_both() {
	local arch rc=0
	[ -d "$TREE/.git" ] || die "no tree: run tools/blkctx prepare"
	for arch in $(arch_list "$@"); do
		GUEST_LOG_SUFFIX="" guest_arch "$arch"
		[ "$GUEST_ARCH_OK" -eq 1 ] || rc=1
		# mmc_test does not look at contexts: once per architecture is enough
		GUEST_LOG_SUFFIX=-nocontexts BLKCTX_GUEST_APPEND="mmc_emu.max_context_id=0" \
			BLKCTX_SELFTESTS="block,mmc:emmc_*" guest_arch "$arch"
		[ "$GUEST_ARCH_OK" -eq 1 ] || rc=1
	done
	echo "selftests: $GUEST_PASSED passed, $GUEST_FAILED failed, $GUEST_SKIPPED skipped"
	return $rc
}

do_test() {
	local rc=0 step
	do_setup
	# CI tests the patch files, whatever an earlier session left in the tree
	if [ "${CI:-}" = true ]; then
		do_prepare --force
	else
		do_prepare
	fi
	for step in do_checkpatch do_kunit do_selftests_both do_pahole do_warnings; do
		say "test: ${step#do_}"
		$step || { say "test: ${step#do_} FAILED"; rc=1; }
	done
	echo "total: $((KUNIT_PASSED + GUEST_PASSED)) passed, $((KUNIT_FAILED + GUEST_FAILED)) failed, $((KUNIT_SKIPPED + GUEST_SKIPPED)) skipped"
	if [ $rc -eq 0 ]; then
		say "test: everything passed"
	else
		say "test: FAILED"
	fi
	return $rc
}

# kunit_build ARCH WHO: build the KUnit kernel that WHO's guest boots.
kunit_build() {
	local log=$BUILD/kunit-$1-build.log
	say "$2: building the $1 kernel"
	kunit_py "$1" build >"$log" 2>&1 || { tail -20 "$log" >&2; die "$2: the kernel does not build"; }
}

# The main job: boot the patched kernel with the emulated eMMC, make ext4,
# write files and show, from the card's log, which context each landed in.
do_demo() {
	local log=$BUILD/selftests-x86_64-demo.log
	do_setup
	do_prepare
	kunit_build x86_64 demo
	GUEST_LOG_SUFFIX=-demo BLKCTX_SELFTEST_TARGETS="demo=$REPO/tools/guest/demo" \
		guest_arch x86_64 >/dev/null
	# /init indents what a test prints by four spaces
	tr -d '\r' <"$log" | sed -n 's/^    \(ctxdemo: .*\)$/\1/p; s/^    \(file  .*\)$/\1/p; s/^    \([a-z]*\.[a-z0-9]* \{1,\}[0-9].*\)$/\1/p'
	[ "$GUEST_ARCH_OK" -eq 1 ] || die "demo: the guest run failed; see $log"
}
