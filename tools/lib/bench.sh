# shellcheck shell=bash
# The benchmark: ext4's context policies against workloads on the emulated
# eMMC's flash model, in an x86_64 guest on the KUnit kernel. It counts host
# pages, NAND pages, GC moves, erases and write requests; nothing is timed,
# but when writeback and journal commits happen still depends on the guest's
# speed, so the counts vary a little from run to run.
#
# Environment (defaults in brackets):
#   BLKCTX_BENCH_WORKLOADS  [mail,db,mix,seq]
#   BLKCTX_BENCH_POLICIES   [none,inode,parent,process,temporal,size,create,hint]
#   BLKCTX_BENCH_JOURNAL    also run each policy with journal_context [1]
#   BLKCTX_BENCH_WAF        the write amplification table [1]
#   BLKCTX_BENCH_REQUESTS   the request counts against pristine 6.12 [1]
#   BLKCTX_BENCH_REPEAT     runs of each kernel for the request counts [3]
#   BLKCTX_BENCH_CARD       card size in MiB [64]
#   BLKCTX_BENCH_BLOCK      erase block in KiB [256]
#   BLKCTX_BENCH_OP         over-provisioning in percent [7]
#   BLKCTX_BENCH_FILL       percent of the filesystem kept in use [80]
#   BLKCTX_BENCH_DISCARD    mount -o discard, so deletions reach the card [1]
#   BLKCTX_BENCH_WARMUP     writes before counting, in card sizes [2]
#   BLKCTX_BENCH_VOLUME     writes counted, in card sizes [2]
#   BLKCTX_BENCH_SEED       [1]
#   BLKCTX_BENCH_OUT        where the table and plot go [$BUILD/bench]

# bench_tenths N: N card sizes in tenths; false when N is no such number
# (it runs inside $(...): it never dies).
bench_tenths() {
	awk -v v="$1" 'BEGIN { if (v !~ /^[0-9]+(\.[0-9])?$/) exit 1; printf "%d", v * 10 + 0.5 }'
}

# bench_lines LOG KEY: ctxbench's lines of the guest's console LOG that
# start with KEY= (workload= for results, seed= for the parameters), without
# the console's carriage returns and the indentation or "#" of the runner.
bench_lines() {
	tr -d '\r' <"$1" | sed -n "s/^ *\(# *\)\{0,1\}ctxbench: \($2=\)/\2/p"
}

# bench_table LOG: the result lines of LOG as a table, one row per workload
# and policy, with WAF - 1 against the no-context baseline.
bench_table() {
	bench_lines "$1" workload |
		awk '
		{
			for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
			key = v["workload"] SUBSEP v["policy"]
			row[++n] = key
			w[key] = v["workload"]; p[key] = v["policy"]
			waf[key] = v["waf"]; host[key] = v["host_pages"]; nand[key] = v["nand_pages"]
			gc[key] = v["gc_moved"]; er[key] = v["erases"]
			req[key] = v["write_requests"]; mrg[key] = v["write_merges"]
			if (v["policy"] == "none") base[v["workload"]] = v["waf"]
		}
		END {
			printf "%-6s %-16s %6s %7s %10s %10s %10s %8s %9s %8s\n", "load", "policy", "WAF", "vs none",
				"host pages", "NAND pages", "GC moves", "erases", "requests", "merges"
			for (i = 1; i <= n; i++) {
				k = row[i]
				b = base[w[k]]
				if (w[k] == "seq" || b == "" || b - 1 <= 0) rel = "-"
				else rel = sprintf("%+.0f%%", ((waf[k] - 1) / (b - 1) - 1) * 100)
				printf "%-6s %-16s %6s %7s %10d %10d %10d %8d %9d %8d\n", w[k], p[k], waf[k], rel,
					host[k], nand[k], gc[k], er[k], req[k], mrg[k]
			}
		}'
}

# bench_caption TABLE: the parameters of the table's first line, readably.
bench_caption() {
	sed -n '1s/^# //p' "$1" | tr ' ' '\n' | awk -F= '{ v[$1] = $2 }
	END {
		printf "%d MiB card, %d KiB erase blocks, %d KiB pages, %s%% spare, %s streams; fs %s full, discard %s; warmup %s, counted %s card sizes; seed %s",
			v["logical_pages"] * v["page_bytes"] / 1048576, v["block_bytes"] / 1024,
			v["page_bytes"] / 1024, v["op_percent"], v["streams"], v["fill"],
			v["discard"] ? "on" : "off", v["warmup"], v["volume"], v["seed"]
	}'
}

# bench_plot TABLE PNG: WAF per policy, a group of bars per workload.
bench_plot() {
	local table=$1 png=$2 data cols plain
	command -v gnuplot >/dev/null || { say "bench: no gnuplot, no plot"; return 0; }
	data=$(mktemp)
	cleanup_add "$data"
	# a matrix: a row per workload, a column per policy, the policies
	# without +journal first
	awk '!/^#/ && NR > 2 && $1 != "seq" {
		if (!(($1) in seenw)) { seenw[$1] = 1; ws[++nw] = $1 }
		if (!(($2) in seenp)) { seenp[$2] = 1; all[++na] = $2 }
		waf[$1, $2] = $3
	}
	END {
		for (j = 1; j <= na; j++) if (all[j] !~ /[+]journal$/) ps[++np] = all[j]
		for (j = 1; j <= na; j++) if (all[j] ~ /[+]journal$/) ps[++np] = all[j]
		printf "load"; for (j = 1; j <= np; j++) printf " %s", ps[j]; print ""
		for (i = 1; i <= nw; i++) {
			printf "%s", ws[i]
			for (j = 1; j <= np; j++) printf " %s", ((ws[i], ps[j]) in waf) ? waf[ws[i], ps[j]] : "?"
			print ""
		}
	}' "$table" >"$data"
	cols=$(head -1 "$data" | wc -w)
	plain=$(head -1 "$data" | tr ' ' '\n' | tail -n +2 | grep -cv '+journal$' || true)
	gnuplot <<PLOT || say "bench: gnuplot failed"
set terminal pngcairo size 1280,600 font ",10" noenhanced
set output "$png"
set title "ext4 context policies on the emulated eMMC: write amplification\n$(bench_caption "$table")"
set ylabel "WAF (NAND pages programmed / host pages written)"
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set key outside right autotitle columnheader
set datafile missing "?"
set yrange [0:*]
set grid ytics
# one colour per policy; with journal_context the same colour, hatched
colors = "#1b9e77 #d95f02 #7570b3 #e7298a #66a61e #e6ab02 #a6761d #666666 #1f78b4 #b2df8a"
plain = $plain
plot for [i=2:plain+1] "$data" using i:xtic(1) lc rgb word(colors, (i - 2) % 10 + 1), \
	for [i=plain+2:$cols] "$data" using i lc rgb word(colors, (i - plain - 2) % 10 + 1) fs pattern 4 border, \
	1 with lines dt 2 lc rgb "black" title "limit (1.0)"
PLOT
	rm -f "$data"
}

# The baseline for request counts: pristine 6.12 with only the emulated eMMC
# (the two series/ patches of mmc_emu, which need nothing else of the series),
# built with the KUnit kernel's .config into $BUILD/pristine-emu-x86_64.
bench_pristine_kernel() {
	local wt=$CACHE/pristine-emu-wt out=$BUILD/pristine-emu-x86_64 stamp log
	local -a emu
	mapfile -t emu < <(find "$REPO/series" -maxdepth 1 -name '[0-9]*-mmc-host-*.patch' | sort)
	[ ${#emu[@]} -ge 2 ] || die "bench: the mmc_emu patches are not in series/"
	mkdir -p "$out"
	stamp="$(tgit rev-parse pristine) $(cat "${emu[@]}" "$BUILD/kunit-x86_64/.config" | sha256sum | cut -c1-16)"
	[ "$(cat "$out/.blkctx-built" 2>/dev/null)" = "$stamp" ] && [ -f "$out/arch/x86/boot/bzImage" ] && return 0
	say "bench: building pristine 6.12 with only the emulated eMMC (log: $out/build.log)"
	rm -rf "$wt"
	tgit worktree prune
	tgit worktree add -q --detach "$wt" pristine
	git -C "$wt" am -q "${emu[@]}" || die "bench: the mmc_emu patches do not apply to pristine 6.12 alone"
	cp "$BUILD/kunit-x86_64/.config" "$out/.config"
	log=$out/build.log
	TREE=$wt arch_make x86_64 O="$out" CC="ccache gcc" olddefconfig bzImage -j"$JOBS" >"$log" 2>&1 ||
		{ tail -20 "$log" >&2; die "bench: the pristine kernel does not build"; }
	echo "$stamp" >"$out/.blkctx-built"
}

# bench_guest BUILD LOG_SUFFIX POLICIES [APPEND]: boot $BUILD/BUILD-x86_64 and
# run ctxbench with the benchmark's parameters and POLICIES.
bench_guest() {
	local build=$1 suffix=$2 policies=$3 extra=${4:-} append
	append="mmc_emu.size_mb=${BLKCTX_BENCH_CARD:-64}"
	append+=" mmc_emu.ftl_block_kb=${BLKCTX_BENCH_BLOCK:-256}"
	append+=" mmc_emu.ftl_op_percent=${BLKCTX_BENCH_OP:-7}"
	append+=" ctxbench.workloads=${BLKCTX_BENCH_WORKLOADS:-mail,db,mix,seq}"
	append+=" ctxbench.policies=$policies"
	append+=" ctxbench.fill=${BLKCTX_BENCH_FILL:-80} ctxbench.seed=${BLKCTX_BENCH_SEED:-1}"
	append+=" ctxbench.discard=${BLKCTX_BENCH_DISCARD:-1}"
	append+=" ctxbench.warmup=$BENCH_WARMUP ctxbench.volume=$BENCH_VOLUME $extra"
	GUEST_BUILD=$build GUEST_LOG_SUFFIX=$suffix \
		BLKCTX_SELFTEST_TARGETS="bench=$REPO/tools/guest/bench" \
		BLKCTX_GUEST_APPEND="$append" GUEST_TIMEOUT=${BLKCTX_GUEST_TIMEOUT:-7200} \
		guest_arch x86_64 >/dev/null
	[ "$GUEST_ARCH_OK" -eq 1 ] || die "bench: the guest run failed; see $BUILD/selftests-x86_64$suffix.log"
}

# bench_counts LOG POLICY: "workload requests merges" for each of POLICY's
# runs, and "seq-file commands -" for the card's writes of seq's own file.
bench_counts() {
	bench_lines "$1" workload |
		awk -v want="$2" '{
			delete v
			for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
			if (v["policy"] != want) next
			print v["workload"], v["write_requests"], v["write_merges"]
			if (v["file_writes"] != "") print v["workload"] "-file", v["file_writes"], "-"
		}'
}

# bench_requests_table COLUMN...: COLUMN is "title|policy|log log ..."; one
# row per workload: the fewest and most write requests, then merges, over
# the column's runs.
bench_requests_table() {
	local col title policy logs log n=0 files=()
	for col in "$@"; do
		IFS='|' read -r title policy logs <<<"$col"
		files+=("$(mktemp)")
		cleanup_add "${files[$n]}"
		{
			echo "$title"
			for log in $logs; do bench_counts "$log" "$policy"; done
		} >"${files[$n]}"
		n=$((n + 1))
	done
	awk '
	function span(lo, hi) { return lo == hi ? lo : lo "-" hi }
	FNR == 1 { c++; title[c] = $0; next }
	{
		if (!(($1) in seen)) { seen[$1] = 1; ws[++nw] = $1 }
		k = $1 SUBSEP c
		if (!(k in rlo) || $2 < rlo[k]) rlo[k] = $2
		if (!(k in rhi) || $2 > rhi[k]) rhi[k] = $2
		if ($3 == "-") next
		if (!(k in mlo) || $3 < mlo[k]) mlo[k] = $3
		if (!(k in mhi) || $3 > mhi[k]) mhi[k] = $3
	}
	END {
		for (t = 1; t <= 2; t++) {
			printf "%-8s", t == 1 ? "writes" : "merges"
			for (j = 1; j <= c; j++) printf " %22s", title[j]
			print ""
			for (i = 1; i <= nw; i++) {
				has = 0
				for (j = 1; j <= c; j++) if ((ws[i] SUBSEP j) in mlo) has = 1
				if (t == 2 && !has) continue
				printf "%-8s", ws[i]
				for (j = 1; j <= c; j++) {
					k = ws[i] SUBSEP j
					if (t == 1) v = (k in rlo) ? span(rlo[k], rhi[k]) : "-"
					else v = (k in mlo) ? span(mlo[k], mhi[k]) : "-"
					printf " %22s", v
				}
				print ""
			}
			if (t == 1) print ""
		}
	}' "${files[@]}"
	rm -f "${files[@]}"
}

do_bench() {
	local out=${BLKCTX_BENCH_OUT:-$BUILD/bench} log policies p with="" i
	local repeat=${BLKCTX_BENCH_REPEAT:-3} pristine="" plain="" contexts=""
	BENCH_WARMUP=$(bench_tenths "${BLKCTX_BENCH_WARMUP:-2}") ||
		die "bench: BLKCTX_BENCH_WARMUP=${BLKCTX_BENCH_WARMUP:-} is not a number of card sizes like 2 or 2.5"
	BENCH_VOLUME=$(bench_tenths "${BLKCTX_BENCH_VOLUME:-2}") ||
		die "bench: BLKCTX_BENCH_VOLUME=${BLKCTX_BENCH_VOLUME:-} is not a number of card sizes like 2 or 2.5"
	do_setup
	if ! command -v gnuplot >/dev/null && [ "$(id -u)" -eq 0 ]; then
		DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends gnuplot-nox >&2 ||
			say "bench: cannot install gnuplot-nox; the table comes without a plot"
	fi
	do_prepare
	kunit_build x86_64 bench
	mkdir -p "$out"
	if [ "${BLKCTX_BENCH_WAF:-1}" = 1 ]; then
		policies=${BLKCTX_BENCH_POLICIES:-none,inode,parent,process,temporal,size,create,hint}
		if [ "${BLKCTX_BENCH_JOURNAL:-1}" = 1 ]; then
			for p in ${policies//,/ }; do with+=",$p,$p+journal"; done
			policies=${with#,}
		fi
		log=$BUILD/selftests-x86_64-bench.log
		bench_guest kunit -bench "$policies"
		{
			echo "# $(bench_lines "$log" seed | head -1)"
			bench_table "$log"
		} >"$out/table.txt"
		cp "$log" "$out/guest.log"
		bench_plot "$out/table.txt" "$out/waf.png"
		cat "$out/table.txt"
		say "bench: table in $out/table.txt, plot in $out/waf.png"
	fi
	[ "${BLKCTX_BENCH_REQUESTS:-1}" = 1 ] || return 0

	# The same workloads, $repeat times each, on pristine 6.12, on the
	# patched kernel with a card without contexts, and with contexts under
	# none and inode: one kernel's own runs show how far counts vary.
	bench_pristine_kernel
	for i in $(seq "$repeat"); do
		bench_guest pristine-emu -bench-requests default
		cp "$BUILD/selftests-x86_64-bench-requests.log" "$out/requests-pristine-$i.log"
		pristine+=" $out/requests-pristine-$i.log"
		bench_guest kunit -bench-requests default mmc_emu.max_context_id=0
		cp "$BUILD/selftests-x86_64-bench-requests.log" "$out/requests-nocontexts-$i.log"
		plain+=" $out/requests-nocontexts-$i.log"
		bench_guest kunit -bench-requests none,inode
		cp "$BUILD/selftests-x86_64-bench-requests.log" "$out/requests-contexts-$i.log"
		contexts+=" $out/requests-contexts-$i.log"
	done
	bench_requests_table "pristine 6.12|default|$pristine" \
		"card without contexts|default|$plain" \
		"contexts, none|none|$contexts" \
		"contexts, inode|inode|$contexts" >"$out/requests.txt"
	echo "write requests and merges the card received, fewest-most over $repeat runs"
	cat "$out/requests.txt"
	say "bench: request counts in $out/requests.txt"
}
