# shellcheck shell=bash
# The benchmark: ext4's context policies against workloads on the emulated
# eMMC's flash model, in an x86_64 guest on the KUnit kernel. It counts host
# pages, NAND pages, GC moves, erases and write requests; nothing is timed,
# but when writeback and journal commits happen still depends on the guest's
# speed, so the counts vary a little from run to run.
#
# Its settings (BLKCTX_BENCH_*): tools/blkctx bench --help.

# bench_tenths N: N card sizes in tenths; false when N is no such number
# (it runs inside $(...): it never dies).
bench_tenths() {
	awk -v v="$1" 'BEGIN { if (v !~ /^[0-9]+(\.[0-9])?$/) exit 1; printf "%d", v * 10 + 0.5 }'
}

# bench_lines LOG KEY: ctxbench's lines of the guest's console LOG that
# start with KEY= (workload= for results, seeds= for the parameters), without
# the console's carriage returns and the indentation or "#" of the runner.
bench_lines() {
	tr -d '\r' <"$1" | sed -n "s/^ *\(# *\)\{0,1\}ctxbench: \($2=\)/\2/p"
}

# bench_table LOG: the result lines of LOG as a table, one row per workload
# and policy over its seeds: the mean WAF and its spread (lowest-highest),
# the excess (WAF - 1) against the no-context baseline, the limit (the mean
# WAF of future-knowledge placement on the row's own logs) and the share of
# none's gap to its limit that the policy closes; the same for placement
# learned from the past (learned, l.gap).
bench_table() {
	bench_lines "$1" workload |
		awk '
		{
			delete v
			for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
			key = v["workload"] SUBSEP v["policy"]
			if (!(key in runs)) { row[++n] = key; w[key] = v["workload"]; p[key] = v["policy"] }
			runs[key]++
			waf[key] += v["waf"]
			if (!(key in lo) || v["waf"] < lo[key]) lo[key] = v["waf"]
			if (!(key in hi) || v["waf"] > hi[key]) hi[key] = v["waf"]
			if (v["limit_waf"] != "") { lim[key] += v["limit_waf"]; nlim[key]++ }
			if (v["learned_waf"] != "") { lrn[key] += v["learned_waf"]; nlrn[key]++ }
			host[key] += v["host_pages"]; nand[key] += v["nand_pages"]
			gc[key] += v["gc_moved"]; er[key] += v["erases"]
			req[key] += v["write_requests"]; mrg[key] += v["write_merges"]
			open[key] += v["open_blocks"]
		}
		END {
			printf "%-6s %-16s %4s %6s %13s %7s %6s %6s %7s %6s %10s %10s %8s %9s %8s %4s\n", "load",
				"policy", "runs", "WAF", "spread", "vs none", "limit", "gap", "learned", "l.gap",
				"host pages", "GC moves", "erases", "requests", "merges", "open"
			for (i = 1; i <= n; i++) {
				k = row[i]; r = runs[k]
				m[k] = waf[k] / r
				if (k in nlim) ml[k] = lim[k] / nlim[k]
				if (k in nlrn) mlrn[k] = lrn[k] / nlrn[k]
			}
			for (i = 1; i <= n; i++) {
				k = row[i]; r = runs[k]
				b = w[k] SUBSEP "none"
				rel = "-"; gap = "-"
				if (w[k] != "seq" && (b in m) && m[b] - 1 > 0.0005)
					rel = sprintf("%+.0f%%", ((m[k] - 1) / (m[b] - 1) - 1) * 100)
				lgap = "-"
				if ((b in ml) && m[b] - ml[b] > 0.0005) {
					gap = sprintf("%.0f%%", (m[b] - m[k]) / (m[b] - ml[b]) * 100)
					if (k in mlrn)
						lgap = sprintf("%.0f%%", (m[b] - mlrn[k]) / (m[b] - ml[b]) * 100)
				}
				printf "%-6s %-16s %4d %6.3f %13s %7s %6s %6s %7s %6s %10d %10d %8d %9d %8d %4.1f\n", w[k],
					p[k], r, m[k], lo[k] == hi[k] ? lo[k] : lo[k] "-" hi[k], rel,
					(k in ml) ? sprintf("%.3f", ml[k]) : "-", gap,
					(k in mlrn) ? sprintf("%.3f", mlrn[k]) : "-", lgap,
					host[k] / r, gc[k] / r, er[k] / r, req[k] / r, mrg[k] / r, open[k] / r
			}
		}'
}

# bench_caption TABLE: the parameters of the table's first line, readably.
bench_caption() {
	sed -n '1s/^# //p' "$1" | tr ' ' '\n' | awk -F= '{ v[$1] = $2 }
	END {
		printf "%d MiB card, %d KiB erase blocks, %d KiB pages, %s%% spare (%d blocks), %s streams; fs %s full, discard %s; warmup %s, counted %s card sizes; seeds %s",
			v["logical_pages"] * v["page_bytes"] / 1048576, v["block_bytes"] / 1024,
			v["page_bytes"] / 1024, v["op_percent"],
			v["physical_blocks"] - v["logical_pages"] * v["page_bytes"] / v["block_bytes"],
			v["streams"], v["fill"],
			v["discard"] ? "on" : "off", v["warmup"], v["volume"], v["seeds"]
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
		waf[$1, $2] = $4
		if ($2 == "none" && $7 != "-") lim[$1] = $7
	}
	END {
		for (j = 1; j <= na; j++) if (all[j] !~ /[+]journal$/) ps[++np] = all[j]
		for (j = 1; j <= na; j++) if (all[j] ~ /[+]journal$/) ps[++np] = all[j]
		printf "load"; for (j = 1; j <= np; j++) printf " %s", ps[j]; print " limit"
		for (i = 1; i <= nw; i++) {
			printf "%s", ws[i]
			for (j = 1; j <= np; j++) printf " %s", ((ws[i], ps[j]) in waf) ? waf[ws[i], ps[j]] : "?"
			printf " %s", (ws[i] in lim) ? lim[ws[i]] : "?"
			print ""
		}
	}' "$table" >"$data"
	cols=$(head -1 "$data" | wc -w)
	# the policies without +journal, the limit (the last column) not counted
	plain=$(($(head -1 "$data" | tr ' ' '\n' | tail -n +2 | grep -cv '+journal$' || true) - 1))
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
	for [i=plain+2:$cols-1] "$data" using i lc rgb word(colors, (i - plain - 2) % 10 + 1) fs pattern 4 border, \
	"$data" using $cols lc rgb "black" title "limit (future knowledge)"
PLOT
	rm -f "$data"
}

# The baseline for request counts: pristine 6.12 with only the emulated eMMC
# (the series/ patches of mmc_emu, which need nothing else of the series),
# built with the KUnit kernel's .config into $BUILD/pristine-emu-x86_64.
bench_pristine_kernel() {
	local wt=$CACHE/pristine-emu-wt out=$BUILD/pristine-emu-x86_64 stamp log
	local -a emu
	mapfile -t emu < <(find "$REPO/series" -maxdepth 1 -name '[0-9]*-mmc-emu-*.patch' | sort)
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
	: >"$log"
	TREE=$wt arch_make_cmd x86_64
	with_progress "bench: pristine build" "$out" "$out/.config" "$log" \
		"${ARCH_MAKE[@]}" O="$out" CC="ccache gcc" olddefconfig bzImage -j"$JOBS" ||
		{ tail -20 "$log" >&2; die "bench: the pristine kernel does not build"; }
	echo "$stamp" >"$out/.blkctx-built"
}

# kunit_build ARCH WHO: build the KUnit kernel that WHO's guest boots.
kunit_build() {
	BLKCTX_CACHE=$CACHE run_child python3 -B "$LIB/kunit_step.py" build "$1" "$2" || exit 1
}

# bench_guest BUILD LOG_SUFFIX POLICIES [APPEND]: boot $BUILD/BUILD-x86_64 and
# run ctxbench with the benchmark's parameters and POLICIES.
bench_guest() {
	local build=$1 suffix=$2 policies=$3 extra=${4:-} append
	append="mmc_emu.size_mb=${BLKCTX_BENCH_CARD:-64}"
	append+=" mmc_emu.ftl_block_kb=${BLKCTX_BENCH_BLOCK:-256}"
	append+=" mmc_emu.ftl_op_percent=${BLKCTX_BENCH_OP:-7}"
	append+=" ctxbench.workloads=${BLKCTX_BENCH_WORKLOADS:-mail,db,mix,phone,seq}"
	append+=" ctxbench.policies=$policies"
	append+=" ctxbench.fill=${BLKCTX_BENCH_FILL:-80} ctxbench.seeds=${BLKCTX_BENCH_SEEDS:-1,2,3}"
	append+=" mmc_emu.log_entries=1048576"
	append+=" ctxbench.warmup=$BENCH_WARMUP ctxbench.volume=$BENCH_VOLUME $extra"
	BLKCTX_CACHE=$CACHE run_child python3 -B "$LIB/selftests_step.py" guest x86_64 \
		--name "${suffix#-}" --build "$build" --targets "bench=$REPO/tools/guest/bench" \
		--append "$append" --timeout "${BLKCTX_GUEST_TIMEOUT:-7200}" >/dev/null ||
		die "bench: the guest run failed; see $BUILD/selftests-x86_64$suffix.log"
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

# bench_policies: the policy list of the WAF runs, with +journal if asked.
bench_policies() {
	local policies=${BLKCTX_BENCH_POLICIES:-none,inode,parent,process,temporal,size,create,hint,lifetime} p with=""
	if [ "${BLKCTX_BENCH_JOURNAL:-1}" = 1 ]; then
		for p in ${policies//,/ }; do with+=",$p,$p+journal"; done
		policies=${with#,}
	fi
	echo "$policies"
}

# bench_reverse LIST: the comma separated LIST backwards.
bench_reverse() {
	tr ',' '\n' <<<"$1" | tac | paste -sd,
}

# bench_waf NAME POLICIES EXTRA: one boot of the WAF runs, its table in
# $out/table-NAME.txt with the parameters as its first line.
bench_waf() {
	local name=$1 policies=$2 extra=$3 log=$BUILD/selftests-x86_64-bench.log
	say "bench: $name: policies $policies; $extra"
	bench_guest kunit -bench "$policies" "$extra"
	{
		echo "# $(bench_lines "$log" seeds | head -1)"
		bench_table "$log"
	} >"$out/table-$name.txt"
	cp "$log" "$out/guest-$name.log"
	cat "$out/table-$name.txt"
}

# bench_isolation IN_ORDER REVERSED: each run of the first seed in both
# tables' logs, side by side: the same run after different others.
bench_isolation() {
	{
		bench_lines "$out/guest-$1.log" workload | sed 's/^/A /'
		bench_lines "$out/guest-$2.log" workload | sed 's/^/B /'
	} | awk -v seed="$3" '
	{
		delete v
		for (i = 2; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
		if (v["workload"] == "seq" || v["seed"] != seed) next
		k = v["workload"] " " v["policy"]
		if (!(k in seen)) { seen[k] = 1; keys[++n] = k }
		waf[$1, k] = v["waf"]
	}
	END {
		printf "%-6s %-16s %10s %10s %7s\n", "load", "policy", "in order", "reversed", "diff"
		for (i = 1; i <= n; i++) {
			k = keys[i]
			if (!(("A", k) in waf) || !(("B", k) in waf)) continue
			split(k, kp, " ")
			printf "%-6s %-16s %10s %10s %+7.3f\n", kp[1], kp[2], waf["A", k], waf["B", k],
				waf["B", k] - waf["A", k]
		}
	}'
}

# bench_results: every table of $out as one Markdown file, each with its
# parameters, and what the columns mean.
bench_results() {
	local t name
	cat <<EOF
# Benchmark results

Made by \`tools/blkctx bench\` on $(date -u +%Y-%m-%d) from $(git -C "$REPO" describe --always --dirty 2>/dev/null || echo "an unknown commit")
(kernel: the series on Debian's linux-source-6.12, x86_64 guest under QEMU TCG).
Environment: $(env | grep '^BLKCTX_BENCH_' | grep -v '^BLKCTX_BENCH_OUT=' | sort | tr '\n' ' ')

Columns: \`runs\` one per seed; \`WAF\` NAND pages programmed per host page
written in the counted window, the mean over the seeds, and \`spread\` the
lowest and highest; \`vs none\` the change of the excess (WAF - 1) against
\`none\`; \`limit\` the mean WAF of the same runs' command logs replayed
through the card's FTL code with future-knowledge placement (each page in a
stream chosen from its true lifetime, SepBIT's oracle), the best that
placement gets from the card's 16 streams; \`gap\` the share of none's gap
to its limit that the policy closes (100% reaches the limit, below 0% is
worse than none); \`learned\` the mean WAF of the same logs placed by
the lifetime of the data each write replaces, learned from the past only
(SepBIT's own rule for user writes, with per-page history a device has and
a filesystem does not), and \`l.gap\` the share of none's gap it closes;
\`open\` the erase blocks open at the end of a run, of
16 host streams and garbage collection. Every run starts from a new card
(the whole card discarded and checked), and every run's log replayed with
its logged contexts gave the card's own counts exactly.

The model: one open erase block per context (0: metadata, journal and
untagged data), one shared by garbage collection for the pages it moves,
greedy GC when a stream needs a block and one is free; spare blocks as the
caption says. Contexts cost open blocks: 16 open host blocks and GC's hold
17 of the spare blocks when every context is used.
EOF
	for t in "$out"/table-*.txt; do
		name=$(basename "$t" .txt)
		name=${name#table-}
		printf '\n## %s\n\n%s\n\n```\n' "$name" "$(bench_caption "$t")"
		tail -n +2 "$t"
		printf '```\n'
		[ ! -f "$out/waf-$name.png" ] || printf '\nPlot: waf-%s.png\n' "$name"
	done
	if [ -s "$out/isolation.txt" ]; then
		printf '\n## Isolation\n\nThe first seed of each run, in the order of the first table and in reverse order (so after different runs):\n\n```\n'
		cat "$out/isolation.txt"
		printf '```\n'
	fi
}

do_bench() {
	local out=${BLKCTX_BENCH_OUT:-$BUILD/bench} policies d g i c
	local repeat=${BLKCTX_BENCH_REPEAT:-3} pristine="" plain="" contexts=""
	local discards=${BLKCTX_BENCH_DISCARD:-1,0} seeds=${BLKCTX_BENCH_SEEDS:-1,2,3}
	local geometries=${BLKCTX_BENCH_GEOMETRIES-256:14,256:28,128:7,512:14}
	BENCH_WARMUP=$(bench_tenths "${BLKCTX_BENCH_WARMUP:-2}") ||
		die "bench: BLKCTX_BENCH_WARMUP=${BLKCTX_BENCH_WARMUP:-} is not a number of card sizes like 2 or 2.5"
	BENCH_VOLUME=$(bench_tenths "${BLKCTX_BENCH_VOLUME:-2}") ||
		die "bench: BLKCTX_BENCH_VOLUME=${BLKCTX_BENCH_VOLUME:-} is not a number of card sizes like 2 or 2.5"
	# the other settings' forms: cli.py checked them (BENCH_SETTINGS) before
	# the cache's lock was taken
	do_setup
	if ! command -v gnuplot >/dev/null && [ "$(id -u)" -eq 0 ]; then
		DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends gnuplot-nox >&2 ||
			say "bench: cannot install gnuplot-nox; the table comes without a plot"
	fi
	do_prepare
	kunit_build x86_64 bench
	mkdir -p "$out"
	rm -f "$out"/table-*.txt "$out"/guest-*.log "$out"/isolation.txt
	if [ "${BLKCTX_BENCH_WAF:-1}" = 1 ]; then
		policies=$(bench_policies)
		# the main card's tables (off: only the other cards, in a run of
		# their own; every run starts from a fresh card either way)
		if [ "${BLKCTX_BENCH_MAIN:-1}" = 1 ]; then
			for d in ${discards//,/ }; do
				bench_waf "discard$d" "$policies" "ctxbench.discard=$d ctxbench.seeds=$seeds"
				bench_plot "$out/table-discard$d.txt" "$out/waf-discard$d.png"
			done
			# The first seed's runs again, each after different others
			if [ "${BLKCTX_BENCH_ISOLATION:-1}" = 1 ]; then
				d=${discards%%,*}
				BLKCTX_BENCH_WORKLOADS=$(bench_reverse "${BLKCTX_BENCH_WORKLOADS:-mail,db,mix,phone,seq}") \
					bench_waf reversed "$(bench_reverse "$policies")" \
					"ctxbench.discard=$d ctxbench.seeds=${seeds%%,*}"
				bench_isolation "discard$d" reversed "${seeds%%,*}" >"$out/isolation.txt"
				cat "$out/isolation.txt"
			fi
		fi
		# Other cards: erase block and spare, none against inode and the limit
		for g in ${geometries//,/ }; do
			BLKCTX_BENCH_BLOCK=${g%%:*} BLKCTX_BENCH_OP=${g#*:} \
				BLKCTX_BENCH_WORKLOADS=${BLKCTX_BENCH_SWEEP_WORKLOADS:-mail,db,mix,phone} \
				bench_waf "geometry-${g/:/-}" "${BLKCTX_BENCH_SWEEP_POLICIES:-none,inode}" \
				"ctxbench.discard=${discards%%,*} ctxbench.seeds=$seeds"
		done
		# Fewer contexts: fewer open blocks pinned by a policy that uses all
		for c in ${BLKCTX_BENCH_CONTEXT_IDS-4}; do
			BLKCTX_BENCH_WORKLOADS=${BLKCTX_BENCH_SWEEP_WORKLOADS:-mail,db,mix,phone} \
				bench_waf "contexts-$c" "${BLKCTX_BENCH_SWEEP_POLICIES:-none,inode}" \
				"ctxbench.discard=${discards%%,*} ctxbench.seeds=$seeds mmc_emu.max_context_id=$c"
		done
		bench_results >"$out/results.md"
		say "bench: tables, plots and parameters in $out/results.md"
	fi
	[ "${BLKCTX_BENCH_REQUESTS:-1}" = 1 ] || return 0

	# The same workloads, $repeat times each, on pristine 6.12, on the
	# patched kernel with a card without contexts, and with contexts under
	# none and inode: one kernel's own runs show how far counts vary.
	bench_pristine_kernel
	for i in $(seq "$repeat"); do
		bench_guest pristine-emu -bench-requests default ctxbench.seeds=1
		cp "$BUILD/selftests-x86_64-bench-requests.log" "$out/requests-pristine-$i.log"
		pristine+=" $out/requests-pristine-$i.log"
		bench_guest kunit -bench-requests default "mmc_emu.max_context_id=0 ctxbench.seeds=1"
		cp "$BUILD/selftests-x86_64-bench-requests.log" "$out/requests-nocontexts-$i.log"
		plain+=" $out/requests-nocontexts-$i.log"
		bench_guest kunit -bench-requests none,inode ctxbench.seeds=1
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

# bench_case OK PASSED FAILED: count one case of bench-check, passed when
# OK is 0, and say PASSED or FAILED.
bench_case() {
	if [ "$1" -eq 0 ]; then
		BENCH_PASS=$((BENCH_PASS + 1))
		say "bench-check: ok: $2"
	else
		BENCH_FAIL=$((BENCH_FAIL + 1))
		say "bench-check: FAILED: $3"
	fi
}

# bench_replay_case NAME EXPECTED ARGS...: one case of ftlreplay on the
# host; EXPECTED is a fixed string its output (stdout and stderr) holds.
bench_replay_case() {
	local name=$1 want=$2 got ok=1
	shift 2
	got=$("$BUILD/ftlreplay" "$@" 2>&1 || true)
	[[ $got != *"$want"* ]] || ok=0
	bench_case $ok "$name" "$name: wanted \"$want\", got: $got"
}

# The benchmark's machinery, checked in the test command. On the host,
# ftlreplay built from the tree's FTL replays canned logs of the geometry
# of the FTL's KUnit suite: with the logged contexts it must give that
# suite's hand-worked counts, with future knowledge no GC at all, and a log
# with a hole is refused; placement learned from the past separates a log's
# hot pages from its cold ones, but is not future knowledge. In the guest, a
# short run of db and phone under none and inode: ctxbench fails a run that
# does not start from a new card or whose log does not replay to the card's
# own counts; a case passes when its run printed the replay's verdict, the
# learned WAF and a limit; and both phone runs must have deleted photos and
# dropped caches (the fill control ran).
do_bench_check() {
	local log=$BUILD/selftests-x86_64-bench-check.log line w p ok sc=$REPO/tools/selfcheck failed
	local -a tiny=(--sectors 400 --page-bytes 512 --block-bytes 2048 --op-percent 18
		--from 0 --count-from 0 --count-to 403)
	BENCH_PASS=0 BENCH_FAIL=0
	do_setup
	do_prepare
	gcc -Wall -O2 -I"$REPO/tools/guest/bench/kshim" -I"$TREE/drivers/mmc/host" \
		-DKBUILD_MODNAME='"mmc_emu"' -o "$BUILD/ftlreplay" \
		"$REPO/tools/guest/bench/ftlreplay.c" "$TREE/drivers/mmc/host/mmc_emu_ftl.c" ||
		die "bench-check: ftlreplay does not build against the tree's FTL"
	bench_replay_case "the logged contexts give the FTL suite's counts" \
		"placement=logged host_pages=600 nand_pages=732 gc_moved=132 erases=66 waf=1.220" \
		"${tiny[@]}" --placement logged "$sc/ftl-two-lifetimes.log"
	bench_replay_case "placement by true lifetime moves nothing" \
		"placement=future host_pages=600 nand_pages=600 gc_moved=0" \
		"${tiny[@]}" --placement future "$sc/ftl-two-lifetimes.log"
	# the past cannot tell that the final rewrite is final: it splits it by
	# the age of the data replaced (two streams) and still moves pages
	bench_replay_case "placement learned from the past is not future knowledge" \
		"placement=past host_pages=600 nand_pages=736 gc_moved=136" \
		"${tiny[@]}" --placement past "$sc/ftl-two-lifetimes.log"
	bench_replay_case "a log with a hole is refused" \
		"the log has no command 17" \
		"${tiny[@]}" --placement logged "$sc/ftl-gap.log"
	# 20 hot pages rewritten in turn among 380 cold pages written once
	awk 'BEGIN {
		for (i = 0; i < 380; i++) { print s++ " W " 20 + i " 1 0 ok - sbc"; print s++ " W " i % 20 " 1 0 ok - sbc" }
		for (r = 0; r < 20; r++) for (i = 0; i < 20; i++) print s++ " W " i " 1 0 ok - sbc"
	}' >"$BUILD/ftl-hot-cold.log"
	tiny[-1]=1160 # --count-to: the whole log
	bench_replay_case "hot and cold pages in one stream: GC moves the cold ones" \
		"placement=logged host_pages=1160 nand_pages=1476 gc_moved=316" \
		"${tiny[@]}" --placement logged "$BUILD/ftl-hot-cold.log"
	bench_replay_case "placement learned from replaced data's lifetime separates them" \
		"placement=past host_pages=1160 nand_pages=1160 gc_moved=0" \
		"${tiny[@]}" --placement past "$BUILD/ftl-hot-cold.log"
	# counted now, so that a guest that dies does not lose them
	report_counts bench-check-replay "$BENCH_PASS" "$BENCH_FAIL" 0
	failed=$BENCH_FAIL BENCH_PASS=0 BENCH_FAIL=0

	kunit_build x86_64 bench-check
	BENCH_WARMUP=5 BENCH_VOLUME=5
	BLKCTX_BENCH_WORKLOADS=db,phone bench_guest kunit -bench-check none,inode \
		"ctxbench.discard=1 ctxbench.seeds=1"
	for w in db phone; do
		for p in none inode; do
			line=$(bench_lines "$log" workload | grep "^workload=$w policy=$p " || true)
			ok=1
			[[ $line != *" replay=exact "*" learned_waf="*" limit_waf="* ]] || ok=0
			bench_case $ok "$line" "no replayed run of $w under $p in $log"
		done
	done
	# phone's fill control ran: photos deleted, caches dropped, in each run
	line=$(tr -d '\r' <"$log" | grep -c 'ctxbench: phone: .*caches_dropped=[1-9][0-9]* .*photos_deleted=[1-9]' || true)
	ok=1
	[ "$line" -ne 2 ] || ok=0
	bench_case $ok "both phone runs deleted photos and dropped caches" \
		"$line of 2 phone runs deleted photos and dropped caches"
	report_counts bench-check "$BENCH_PASS" "$BENCH_FAIL" 0
	[ $((failed + BENCH_FAIL)) -eq 0 ] || { say "bench-check: see $log"; exit 1; }
}
