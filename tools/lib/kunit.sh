# shellcheck shell=bash
# The commands that boot several guests (selftests and demo), and the KUnit
# kernels, through tools/lib/kunit_step.py (which runs the kunit
# command: the tree's own kunit.py, one build directory per architecture).

# kunit_config ARCH FILE: the .config kunit.py builds for ARCH.
kunit_config() {
	BLKCTX_CACHE=$CACHE run_child python3 -B "$LIB/kunit_step.py" config "$1" "$2" || exit 1
}

# The guests each architecture boots after the first, which runs every test
# with the card's contexts turned on (mmc_core.contexts=1): log suffix,
# mmc_core.contexts, more kernel parameters ("-" for none), the tests.
# mmc_test does not look at contexts, so it runs only in the first.  Where
# contexts are off, on a card without them, on a host without CMD23 and on
# cards whose context fields cannot be trusted, the tests that need contexts
# skip and those for a card without them run; the largest large unit checks
# the granularity; aggressive PM runtime-suspends the card between tests;
# a command queue engine host sends every read and write as a queued task
# (its context in CMD44) and runs the storm through CQE recovery; a card
# with boot partitions shows that they get no streams; a card whose erased
# memory reads as ones cannot zero by trimming, so ext4 writes its zeroes;
# parameters out of range ("+" joins several) leave no card at all, and so
# does a flash geometry the model cannot have (its probe fails).
SELFTEST_GUESTS=(
	"-nocontexts 0 - block,mmc:emmc_*"
	"-cardnocontexts 1 mmc_emu.max_context_id=0 block,mmc:emmc_*"
	"-nocmd23 1 mmc_emu.host_cmd23=0 mmc:emmc_contexts"
	"-capsreserved 1 mmc_emu.context_caps_reserved=1 mmc:emmc_contexts"
	"-emmc441 1 mmc_emu.ext_csd_rev=5 mmc:emmc_contexts"
	"-largeunit 1 mmc_emu.large_unit_size_mb=256 mmc:emmc_contexts,mmc:emmc_extcsd"
	"-runtimepm 1 mmc_emu.aggressive_pm=1 mmc:emmc_contexts"
	"-cqe 1 mmc_emu.cqe=1 block,mmc:emmc_*"
	"-boot 1 mmc_emu.boot_size_kb=4096 mmc:emmc_contexts"
	"-erasedones 1 mmc_emu.erased_ones=1 mmc:emmc_policies"
	"-badparams 1 mmc_emu.size_mb=0+mmc_emu.max_context_id=16+mmc_emu.large_unit_size_mb=0+mmc_emu.ext_csd_rev=9+mmc_emu.boot_size_kb=100 mmc:emmc_contexts"
	"-badftl 1 mmc_emu.ftl_block_kb=6 mmc:emmc_contexts"
)

# guest_names: main and the names of SELFTEST_GUESTS, without their "-".
guest_names() {
	local guest
	echo main
	for guest in "${SELFTEST_GUESTS[@]}"; do
		guest=${guest%% *}
		echo "${guest#-}"
	done
}

# guest_wanted NAME: BLKCTX_GUESTS is empty or names it.
guest_wanted() {
	[ -z "${BLKCTX_GUESTS:-}" ] || [[ ",$BLKCTX_GUESTS," == *",$1,"* ]]
}

do_selftests_both() {
	local arch guest suffix contexts append tests initrd use save name rc=0
	for name in ${BLKCTX_GUESTS:+${BLKCTX_GUESTS//,/ }}; do
		guest_names | grep -xF -- "$name" >/dev/null ||
			die "BLKCTX_GUESTS: no guest \"$name\"; the guests are: $(guest_names | paste -sd, -)"
	done
	tree_current
	for arch in $(arch_list "$@"); do
		# one initramfs per architecture: the guests differ only in the
		# kernel's command line
		initrd=$(mktemp "${TMPDIR:-/tmp}/blkctx-initramfs.XXXXXX")
		cleanup_add "$initrd"
		if guest_wanted main; then
			GUEST_LOG_SUFFIX="" GUEST_INITRD_SAVE=$initrd guest_arch "$arch"
			[ "$GUEST_ARCH_OK" -eq 1 ] || rc=1
		fi
		for guest in "${SELFTEST_GUESTS[@]}"; do
			read -r suffix contexts append tests <<<"$guest"
			guest_wanted "${suffix#-}" || continue
			[ "$append" != - ] || append=""
			append=${append//+/ }
			# the first to boot builds the initramfs (none built yet:
			# main not booted, or no kernel), the others boot it; tests
			# the user named replace the guest's own
			use=$initrd save=""
			[ -s "$initrd" ] || { use="" save=$initrd; }
			GUEST_LOG_SUFFIX=$suffix BLKCTX_GUEST_CONTEXTS=$contexts \
				BLKCTX_GUEST_APPEND=$append BLKCTX_SELFTESTS=${BLKCTX_SELFTESTS:-$tests} \
				GUEST_INITRD=$use GUEST_INITRD_SAVE=$save guest_arch "$arch"
			[ "$GUEST_ARCH_OK" -eq 1 ] || rc=1
		done
	done
	echo "selftests: $GUEST_PASSED passed, $GUEST_FAILED failed, $GUEST_SKIPPED skipped"
	return $rc
}

# kunit_build ARCH WHO: build the KUnit kernel that WHO's guest boots.
kunit_build() {
	BLKCTX_CACHE=$CACHE run_child python3 -B "$LIB/kunit_step.py" build "$1" "$2" || exit 1
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
