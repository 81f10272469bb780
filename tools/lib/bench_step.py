#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""The benchmark: ext4's context policies against workloads on the emulated
eMMC's flash model, in an x86_64 guest on the KUnit kernel.

  bench         the tables, plots and parameters in one results file
  bench-check   the benchmark's machinery, checked (a step of test)

It counts host pages, NAND pages, GC moves, erases and write requests;
nothing is timed, but when writeback and journal commits happen still
depends on the guest's speed, so the counts vary a little from run to run.
Its settings (BLKCTX_BENCH_*): tools/blkctx bench --help.
"""

import argparse
import glob
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

sys.dont_write_bytecode = True

# after the line above: these import nothing that writes bytecode
import common  # noqa: E402
from common import REPO, Failure  # noqa: E402
import kunit_step  # noqa: E402
import procs  # noqa: E402
from procs import say  # noqa: E402
import selftests_step  # noqa: E402
import tree_step  # noqa: E402

ALL_WORKLOADS = "mail,db,mix,phone,seq"
ALL_POLICIES = "none,inode,parent,process,temporal,size,create,hint,lifetime"
SWEEP_WORKLOADS = "mail,db,mix,phone"
NUMBER = re.compile(r"^\s*[-+]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?")


def setting(name, default):
    """$NAME, or DEFAULT when it is unset or empty."""
    return os.environ.get(name) or default


def num(text):
    """TEXT as awk reads a number: its leading number, or 0."""
    found = NUMBER.match(text or "")
    return float(found.group(0)) if found else 0.0


def console_lines(log, key):
    """ctxbench's lines of the guest's console LOG that start with KEY=
    (workload= for results, seeds= for the parameters), without the
    console's carriage returns and the indentation or "#" of the runner."""
    pattern = re.compile(r"^ *(# *)?ctxbench: (%s=.*)$" % re.escape(key))
    found = []
    with open(log, errors="replace") as f:
        for line in f:
            match = pattern.match(line.replace("\r", "").rstrip("\n"))
            if match:
                found.append(match.group(2))
    return found


def fields(line):
    """The KEY=VALUE words of LINE (a word without "=" has an empty value)."""
    values = {}
    for word in line.split():
        parts = word.split("=")
        values[parts[0]] = parts[1] if len(parts) > 1 else ""
    return values


def parameters(log):
    """The words of LOG's ctxbench parameters line, card_mib, and the
    kernel's release and build (linux)."""
    seeds = console_lines(log, "seeds")
    v = fields(seeds[0]) if seeds else {}
    v["card_mib"] = "%d" % (num(v.get("logical_pages")) * num(v.get("page_bytes")) / 1048576)
    v["block_kib"] = "%d" % (num(v.get("block_bytes")) / 1024)
    with open(log, errors="replace") as f:
        for line in f:
            found = re.search(r"Linux version (\S+) .*?(#[0-9]+)", line)
            if found:
                v["linux"] = found.group(1) + found.group(2)
                break
    return v


def differing(have, want):
    """The words of WANT (a dict) that HAVE differs in, as "key=have, not want"."""
    return ["%s=%s, not %s" % (k, have.get(k, "?"), v) for k, v in sorted(want.items())
            if have.get(k) != v]


def earlier_none(log, workloads=(), want=None):
    """none's result lines in LOG, the console of an earlier boot of a card,
    for table(); a Failure unless it has one run of none of every workload
    in WORKLOADS for every seed, and WANT's parameters (parameters()'s
    words)."""
    try:
        lines = [line for line in console_lines(log, "workload")
                 if fields(line).get("policy") == "none"]
        have = parameters(log)
    except OSError as e:
        raise Failure("bench: %s: %s" % (log, e.strerror))
    other = differing(have, want or {})
    if other:
        raise Failure("bench: %s: another card or run: %s" % (log, "; ".join(other)))
    runs = {}
    for line in lines:
        key = (fields(line).get("workload"), fields(line).get("seed"))
        runs[key] = runs.get(key, 0) + 1
    seeds = have.get("seeds", "").split(",")
    odd = ["%s seed %s: %d" % (w, seed, runs.get((w, seed), 0))
           for w in workloads for seed in seeds if runs.get((w, seed), 0) != 1]
    if not lines or odd:
        raise Failure("bench: %s: not one run of none a seed%s" % (
            log, " (%s)" % ", ".join(odd) if odd else ""))
    return lines


def table(log, earlier=None):
    """The result lines of LOG as a table, one row per workload and policy
    over its seeds: the mean WAF and its spread (lowest-highest), the excess
    (WAF - 1) against the no-context baseline, the limit (the mean WAF of
    future-knowledge placement on the row's own logs) and the share of
    none's gap to its limit that the policy closes; the same for placement
    learned from the past (learned, l.gap). EARLIER (earlier_none()) gives
    none's runs of the workloads that LOG has none of, as if in LOG."""
    lines = console_lines(log, "workload")
    own = {(fields(line).get("workload"), fields(line).get("policy")) for line in lines}
    borrowed = {}
    for line in earlier or []:
        load = fields(line).get("workload")
        if (load, "none") not in own:
            borrowed.setdefault(load, []).append(line)
    # another boot's none first in its workload, as none comes first in a boot
    merged = []
    for line in lines:
        merged += borrowed.pop(fields(line).get("workload"), [])
        merged.append(line)
    rows = {}
    for line in merged:
        v = fields(line)
        key = (v.get("workload", ""), v.get("policy", ""))
        row = rows.setdefault(key, {"runs": 0, "waf": 0.0, "lo": None, "hi": None,
                                    "limits": [], "learned": [], "host": 0.0, "nand": 0.0,
                                    "gc": 0.0, "erases": 0.0, "requests": 0.0, "merges": 0.0,
                                    "open": 0.0})
        waf = v.get("waf", "")
        row["runs"] += 1
        row["waf"] += num(waf)
        if row["lo"] is None or num(waf) < num(row["lo"]):
            row["lo"] = waf
        if row["hi"] is None or num(waf) > num(row["hi"]):
            row["hi"] = waf
        if v.get("limit_waf"):
            row["limits"].append(num(v["limit_waf"]))
        if v.get("learned_waf"):
            row["learned"].append(num(v["learned_waf"]))
        for name, word in (("host", "host_pages"), ("nand", "nand_pages"), ("gc", "gc_moved"),
                           ("erases", "erases"), ("requests", "write_requests"),
                           ("merges", "write_merges"), ("open", "open_blocks")):
            row[name] += num(v.get(word, ""))
    out = ["%-6s %-16s %4s %6s %13s %7s %6s %6s %7s %6s %10s %10s %8s %9s %8s %4s" % (
        "load", "policy", "runs", "WAF", "spread", "vs none", "limit", "gap", "learned", "l.gap",
        "host pages", "GC moves", "erases", "requests", "merges", "open")]
    mean = {k: r["waf"] / r["runs"] for k, r in rows.items()}
    limit = {k: sum(r["limits"]) / len(r["limits"]) for k, r in rows.items() if r["limits"]}
    learned = {k: sum(r["learned"]) / len(r["learned"]) for k, r in rows.items() if r["learned"]}
    for key, row in rows.items():
        runs = row["runs"]
        base = (key[0], "none")
        rel = gap = learned_gap = "-"
        if key[0] != "seq" and base in mean and mean[base] - 1 > 0.0005:
            rel = "%+.0f%%" % (((mean[key] - 1) / (mean[base] - 1) - 1) * 100)
        if base in limit and mean[base] - limit[base] > 0.0005:
            span = mean[base] - limit[base]
            gap = "%.0f%%" % ((mean[base] - mean[key]) / span * 100)
            if key in learned:
                learned_gap = "%.0f%%" % ((mean[base] - learned[key]) / span * 100)
        out.append("%-6s %-16s %4d %6.3f %13s %7s %6s %6s %7s %6s %10d %10d %8d %9d %8d %4.1f" % (
            key[0], key[1], runs, mean[key],
            row["lo"] if row["lo"] == row["hi"] else row["lo"] + "-" + row["hi"], rel,
            "%.3f" % limit[key] if key in limit else "-", gap,
            "%.3f" % learned[key] if key in learned else "-", learned_gap,
            int(row["host"] / runs), int(row["gc"] / runs), int(row["erases"] / runs),
            int(row["requests"] / runs), int(row["merges"] / runs), row["open"] / runs))
    return "\n".join(out) + "\n"


def caption(table_file):
    """The parameters of a table's first line, readably, and where its none
    came from if from another boot."""
    with open(table_file, errors="replace") as f:
        first = f.readline().rstrip("\n")
    v = {}
    for word in (first[2:] if first.startswith("# ") else "").split(" "):
        parts = word.split("=")
        v[parts[0]] = parts[1] if len(parts) > 1 else ""

    def n(name):
        return num(v.get(name, ""))

    card = n("logical_pages") * n("page_bytes")
    discard = v.get("discard", "")
    on = num(discard) != 0 if NUMBER.fullmatch(discard.strip() or "x") else discard != ""
    return ("%d MiB card, %d KiB erase blocks, %d KiB pages, %s%% spare (%d blocks), "
            "%s streams; fs %s full, discard %s; warmup %s, counted %s card sizes; seeds %s") % (
        card / 1048576, n("block_bytes") / 1024, n("page_bytes") / 1024,
        v.get("op_percent", ""),
        n("physical_blocks") - (card / n("block_bytes") if n("block_bytes") else 0),
        v.get("streams", ""), v.get("fill", ""), "on" if on else "off",
        v.get("warmup", ""), v.get("volume", ""), v.get("seeds", "")) + (
        "; none's runs from another boot: %s%s" % (
            first.partition(" none_from=")[2],
            ", kernel " + v["none_linux"] if v.get("none_linux") else "")
        if " none_from=" in first else "")


def plot_matrix(lines):
    """The plot's data from a table's LINES: (the policies without
    +journal, every policy in the plot's order, gnuplot's rows: a workload,
    its WAF per policy, its limit). The limit is none's runs' where none
    ran, else the first policy's: every run's log has one."""
    workloads, policies, waf, limit = [], [], {}, {}
    for line in lines[2:]:
        words = line.split()
        if not words or line.startswith("#") or words[0] == "seq":
            continue
        if words[0] not in workloads:
            workloads.append(words[0])
        if words[1] not in policies:
            policies.append(words[1])
        waf[words[0], words[1]] = words[3]
        if words[6] != "-" and (words[1] == "none" or words[0] not in limit):
            limit[words[0]] = words[6]
    # the policies without +journal first
    plain = [p for p in policies if not p.endswith("+journal")]
    ordered = plain + [p for p in policies if p.endswith("+journal")]
    data = ["load " + " ".join(ordered) + " limit"]
    for w in workloads:
        data.append(" ".join([w] + [waf.get((w, p), "?") for p in ordered] + [limit.get(w, "?")]))
    return plain, ordered, data


def plot(table_file, png):
    """WAF per policy, a group of bars per workload (with gnuplot, if any)."""
    if not shutil.which("gnuplot"):
        say("bench: no gnuplot, no plot")
        return
    with open(table_file, errors="replace") as f:
        plain, ordered, data = plot_matrix(f.read().splitlines())
    columns = len(ordered) + 2
    with tempfile.NamedTemporaryFile("w", suffix=".dat") as matrix:
        matrix.write("\n".join(data) + "\n")
        matrix.flush()
        script = """set terminal pngcairo size 1280,600 font ",10" noenhanced
set output "%(png)s"
set title "ext4 context policies on the emulated eMMC: write amplification\\n%(caption)s"
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
plain = %(plain)d
plot for [i=2:plain+1] "%(data)s" using i:xtic(1) lc rgb word(colors, (i - 2) %% 10 + 1), \\
	for [i=plain+2:%(cols)d-1] "%(data)s" using i lc rgb word(colors, (i - plain - 2) %% 10 + 1) fs pattern 4 border, \\
	"%(data)s" using %(cols)d lc rgb "black" title "limit (future knowledge)"
""" % {"png": png, "caption": caption(table_file), "plain": len(plain), "data": matrix.name,
            "cols": columns}
        done = subprocess.run(["gnuplot"], input=script, text=True, check=False)
        if done.returncode != 0:
            say("bench: gnuplot failed")


def counts(log, policy):
    """(workload, requests, merges) for each of POLICY's runs in LOG, and
    (workload-file, commands, None) for the card's writes of seq's file."""
    found = []
    for line in console_lines(log, "workload"):
        v = fields(line)
        if v.get("policy") != policy:
            continue
        found.append((v.get("workload", ""), v.get("write_requests", ""),
                      v.get("write_merges", "")))
        if v.get("file_writes"):
            found.append((v.get("workload", "") + "-file", v["file_writes"], None))
    return found


def requests_table(columns):
    """COLUMNS: (title, policy, logs); a row per workload: the fewest and
    most write requests, then merges, over the column's runs."""
    def span(values):
        lo = min(values, key=num)
        hi = max(values, key=num)
        return lo if lo == hi else lo + "-" + hi

    workloads, writes, merges = [], {}, {}
    for column, (_, policy, logs) in enumerate(columns):
        for log in logs:
            for workload, requests, merged in counts(log, policy):
                if workload not in workloads:
                    workloads.append(workload)
                writes.setdefault((workload, column), []).append(requests)
                if merged is not None:
                    merges.setdefault((workload, column), []).append(merged)
    out = []
    for title, values in (("writes", writes), ("merges", merges)):
        out.append("%-8s" % title + "".join(" %22s" % c[0] for c in columns))
        for w in workloads:
            if values is merges and not any((w, c) in merges for c in range(len(columns))):
                continue
            out.append("%-8s" % w + "".join(
                " %22s" % (span(values[w, c]) if (w, c) in values else "-")
                for c in range(len(columns))))
        if values is writes:
            out.append("")
    return "\n".join(out) + "\n"


def policies_with_journal():
    """The policy list of the WAF runs, with +journal if asked."""
    policies = setting("BLKCTX_BENCH_POLICIES", ALL_POLICIES).split(",")
    if setting("BLKCTX_BENCH_JOURNAL", "1") == "1":
        policies = [q for p in policies for q in (p, p + "+journal")]
    return ",".join(policies)


def reverse(text):
    return ",".join(reversed(text.split(",")))


def isolation(log_a, log_b, seed):
    """Each run of SEED in both logs side by side: the same run after
    different others."""
    waf, keys = {}, []
    for side, log in (("A", log_a), ("B", log_b)):
        for line in console_lines(log, "workload"):
            v = fields(line)
            if v.get("workload") == "seq" or v.get("seed") != seed:
                continue
            key = (v.get("workload", ""), v.get("policy", ""))
            if key not in keys:
                keys.append(key)
            waf[side, key] = v.get("waf", "")
    out = ["%-6s %-16s %10s %10s %7s" % ("load", "policy", "in order", "reversed", "diff")]
    for key in keys:
        if ("A", key) in waf and ("B", key) in waf:
            out.append("%-6s %-16s %10s %10s %+7.3f" % (
                key[0], key[1], waf["A", key], waf["B", key],
                num(waf["B", key]) - num(waf["A", key])))
    return "\n".join(out) + "\n"


COLUMNS = """Columns: `runs` one per seed; `WAF` NAND pages programmed per host page
written in the counted window, the mean over the seeds, and `spread` the
lowest and highest; `vs none` the change of the excess (WAF - 1) against
`none`; `limit` the mean WAF of the same runs' command logs replayed
through the card's FTL code with future-knowledge placement (each page in a
stream chosen from its true lifetime, SepBIT's oracle), the best that
placement gets from the card's 16 streams; `gap` the share of none's gap
to its limit that the policy closes (100% reaches the limit, below 0% is
worse than none); `learned` the mean WAF of the same logs placed by
the lifetime of the data each write replaces, learned from the past only
(SepBIT's own rule for user writes, with per-page history a device has and
a filesystem does not), and `l.gap` the share of none's gap it closes;
`open` the erase blocks open at the end of a run, of
16 host streams and garbage collection. Every run starts from a new card
(the whole card discarded and checked), and every run's log replayed with
its logged contexts gave the card's own counts exactly.

The model: one open erase block per context (0: metadata, journal and
untagged data), one shared by garbage collection for the pages it moves,
greedy GC when a stream needs a block and one is free; spare blocks as the
caption says. Contexts cost open blocks: 16 open host blocks and GC's hold
17 of the spare blocks when every context is used.
"""


def results(out):
    """Every table of OUT as one Markdown file, each with its parameters,
    and what the columns mean."""
    try:
        commit = subprocess.run(["git", "-C", REPO, "describe", "--always", "--dirty"],
                                capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        commit = ""
    environment = sorted("%s=%s" % (k, v) for k, v in os.environ.items()
                         if k.startswith("BLKCTX_BENCH_") and k != "BLKCTX_BENCH_OUT")
    text = ["# Benchmark results\n",
            "Made by `tools/blkctx bench` on %s from %s" % (
                time.strftime("%Y-%m-%d", time.gmtime()), commit or "an unknown commit"),
            "(kernel: the series on Debian's linux-source-6.12, x86_64 guest under QEMU TCG).",
            "Environment: " + "".join(e + " " for e in environment) + "\n",
            COLUMNS.rstrip("\n")]
    for path in sorted(glob.glob(os.path.join(out, "table-*.txt"))):
        name = os.path.basename(path)[len("table-"):-len(".txt")]
        with open(path, errors="replace") as f:
            body = "".join(f.readlines()[1:])
        text.append("\n## %s\n\n%s\n\n```\n%s```" % (name, caption(path), body))
        if os.path.isfile(os.path.join(out, "waf-%s.png" % name)):
            text.append("\nPlot: waf-%s.png" % name)
    isolated = os.path.join(out, "isolation.txt")
    if os.path.isfile(isolated) and os.path.getsize(isolated):
        with open(isolated) as f:
            text.append("\n## Isolation\n\nThe first seed of each run, in the order of the "
                        "first table and in reverse order (so after different runs):\n\n```\n"
                        "%s```" % f.read())
    return "\n".join(text) + "\n"


def shown(path):
    """PATH as the repository's readers know it: relative if in it."""
    inside = os.path.relpath(path, REPO)
    return path if inside.startswith("..") else inside


class Bench:
    """One bench or bench-check run: where its tables go, and the card
    sizes of its warmup and counted window."""

    def __init__(self, out, warmup="2", volume="2"):
        self.out = out
        self.warmup = int(float(warmup) * 10 + 0.5)
        self.volume = int(float(volume) * 10 + 0.5)

    def guest(self, build, name, policies, extra="", workloads=None, block=None, op=None):
        """Boot build/BUILD-x86_64 and run ctxbench with the benchmark's
        parameters and POLICIES; its console's path."""
        append = ["mmc_emu.size_mb=" + setting("BLKCTX_BENCH_CARD", "64"),
                  "mmc_emu.ftl_block_kb=" + (block or setting("BLKCTX_BENCH_BLOCK", "256")),
                  "mmc_emu.ftl_op_percent=" + (op or setting("BLKCTX_BENCH_OP", "7")),
                  "ctxbench.workloads=" + (workloads or setting("BLKCTX_BENCH_WORKLOADS",
                                                                ALL_WORKLOADS)),
                  "ctxbench.policies=" + policies,
                  "ctxbench.fill=" + setting("BLKCTX_BENCH_FILL", "80"),
                  "ctxbench.seeds=" + setting("BLKCTX_BENCH_SEEDS", "1,2,3"),
                  "mmc_emu.log_entries=1048576",
                  "ctxbench.warmup=%d" % self.warmup, "ctxbench.volume=%d" % self.volume]
        settings = selftests_step.Settings.from_environment()._replace(
            build=build, targets="bench=" + os.path.join(REPO, "tools/guest/bench"),
            timeout=int(setting("BLKCTX_GUEST_TIMEOUT", "7200")))
        counted = selftests_step.run_guest(
            "x86_64", settings, selftests_step.Guest(name, append=" ".join(append + extra.split())),
            echo=False)
        log = os.path.join(common.BUILD, "selftests-x86_64-%s.log" % name)
        if counted.failed:
            raise Failure("bench: the guest run failed; see " + log)
        return log

    def waf(self, name, policies, extra, none_from=None, **guest):
        """One boot of the WAF runs, its table in OUT/table-NAME.txt with the
        parameters as its first line; NONE_FROM, the console of an earlier
        boot of the same card, gives none's runs where POLICIES has none."""
        say("bench: %s: policies %s; %s" % (name, policies, extra))
        earlier = earlier_none(none_from) if none_from else None
        log = self.guest("kunit", "bench", policies, extra, **guest)
        # kept: isolation() and a later BLKCTX_BENCH_NONE_FROM read it
        shutil.copyfile(log, os.path.join(self.out, "guest-%s.log" % name))
        seeds = console_lines(log, "seeds")
        header = seeds[0] if seeds else ""
        if earlier:
            have, mine = parameters(none_from), parameters(log)
            other = differing(have, {k: v for k, v in mine.items() if k != "linux"})
            if other:
                say("bench: %s: not used, another card or run: %s" % (none_from,
                                                                     "; ".join(other)))
                earlier = None
            else:
                # the kernel only if another: it changes what none measures
                if have.get("linux") != mine.get("linux"):
                    header += " none_linux=" + have.get("linux", "?")
                header += " none_from=" + shown(none_from)
        path = os.path.join(self.out, "table-%s.txt" % name)
        with open(path, "w") as f:
            f.write("# %s\n%s" % (header, table(log, earlier)))
        with open(path) as f:
            sys.stdout.write(f.read())
        sys.stdout.flush()


def setup_and_prepare():
    """What bench and bench-check begin with: setup and the tree."""
    common.run_setup("bench")
    tree_step.Tree().prepare()


def pristine_kernel():
    """The baseline for request counts: pristine 6.12 with only the emulated
    eMMC (the series/ patches of mmc_emu, which need nothing else of the
    series), built with the KUnit kernel's .config into
    build/pristine-emu-x86_64."""
    emu = sorted(glob.glob(os.path.join(REPO, "series", "[0-9]*-mmc-emu-*.patch")))
    if len(emu) < 2:
        raise Failure("bench: the mmc_emu patches are not in series/")
    out = os.path.join(common.BUILD, "pristine-emu-x86_64")
    worktree = os.path.join(common.CACHE, "pristine-emu-wt")
    config = os.path.join(kunit_step.build_dir("x86_64"), ".config")
    os.makedirs(out, exist_ok=True)
    digest = hashlib.sha256()
    for path in emu + [config]:
        with open(path, "rb") as f:
            digest.update(f.read())
    stamp = "%s %s" % (common.git_text(common.TREE, "rev-parse", "pristine"),
                       digest.hexdigest()[:16])
    try:
        with open(os.path.join(out, ".blkctx-built")) as f:
            built = f.read().strip()
    except OSError:
        built = ""
    if built == stamp and os.path.isfile(os.path.join(out, "arch/x86/boot/bzImage")):
        return
    log = os.path.join(out, "build.log")
    say("bench: building pristine 6.12 with only the emulated eMMC (log: %s)" % log)
    shutil.rmtree(worktree, ignore_errors=True)
    common.worktree(worktree, "pristine")
    applied = tree_step.Tree().run_git("am", "-q", *emu, cwd=worktree)
    if applied.returncode != 0:
        # git am says which patch failed on its standard output
        sys.stderr.write(applied.stdout)
        raise Failure("bench: the mmc_emu patches do not apply to pristine 6.12 alone")
    shutil.copyfile(config, os.path.join(out, ".config"))
    with open(log, "w") as f:
        status = procs.run(common.arch_make("x86_64", worktree) +
                           ["O=" + out, "CC=ccache gcc", "olddefconfig", "bzImage",
                            "-j" + common.JOBS], "bench: pristine build",
                           procs.progress_seconds(), out=f,
                           detail=lambda: procs.objects_since(out, os.path.join(out, ".config")))
    if status != 0:
        common.show_log_end(log)
        raise Failure("bench: the pristine kernel does not build")
    with open(os.path.join(out, ".blkctx-built"), "w") as f:
        f.write(stamp + "\n")


def earlier_nones(out, cards, policies, workloads, discard, seeds):
    """BLKCTX_BENCH_NONE_FROM's consoles of none for CARDS, by name, each
    checked before hours of runs: none's runs of every workload and seed,
    on the same card with the same ctxbench parameters; {} where POLICIES
    runs none itself."""
    directory = setting("BLKCTX_BENCH_NONE_FROM", "")
    if not directory:
        return {}
    if "none" in policies.split(",") or setting("BLKCTX_BENCH_WAF", "1") != "1" or not cards:
        say("bench: BLKCTX_BENCH_NONE_FROM not used: no other card runs without none")
        return {}
    if os.path.realpath(directory) == os.path.realpath(out):
        raise Failure("BLKCTX_BENCH_NONE_FROM: an earlier run's BLKCTX_BENCH_OUT, not this "
                      "run's (its guest logs are removed first)")
    want = {"seeds": seeds, "fill": setting("BLKCTX_BENCH_FILL", "80") + "%",
            "discard": discard, "card_mib": setting("BLKCTX_BENCH_CARD", "64"),
            "warmup": "%.1f" % float(setting("BLKCTX_BENCH_WARMUP", "2")),
            "volume": "%.1f" % float(setting("BLKCTX_BENCH_VOLUME", "2"))}
    found = {}
    for name, _, _, card in cards:
        log = os.path.abspath(os.path.join(directory, "guest-%s.log" % name))
        earlier_none(log, workloads.split(","), dict(want, **card))
        found[name] = log
    return found


def command_bench():
    out = setting("BLKCTX_BENCH_OUT", os.path.join(common.BUILD, "bench"))
    discards = setting("BLKCTX_BENCH_DISCARD", "1,0").split(",")
    seeds = setting("BLKCTX_BENCH_SEEDS", "1,2,3")
    geometries = os.environ.get("BLKCTX_BENCH_GEOMETRIES", "256:14,256:28,128:7,512:14")
    contexts = os.environ.get("BLKCTX_BENCH_CONTEXT_IDS", "4")
    sweep_workloads = setting("BLKCTX_BENCH_SWEEP_WORKLOADS", SWEEP_WORKLOADS)
    sweep_policies = setting("BLKCTX_BENCH_SWEEP_POLICIES", "none,inode")
    # the other cards: name, ctxbench's and the guest's parameters, and what
    # their consoles' parameters say of the card
    cards = []
    for geometry in filter(None, geometries.split(",")):
        block, op = geometry.split(":")
        cards.append(("geometry-%s-%s" % (block, op), "", {"block": block, "op": op},
                      {"block_kib": block, "op_percent": op}))
    for ids in contexts.split():
        cards.append(("contexts-" + ids, " mmc_emu.max_context_id=" + ids, {},
                      {"block_kib": setting("BLKCTX_BENCH_BLOCK", "256"),
                       "op_percent": setting("BLKCTX_BENCH_OP", "7"), "streams": ids}))
    none_from = earlier_nones(out, cards, sweep_policies, sweep_workloads,
                              discards[0], seeds)
    # the settings' forms: cli.py checked them (BENCH_SETTINGS) before the
    # cache's lock was taken
    bench = Bench(out, setting("BLKCTX_BENCH_WARMUP", "2"), setting("BLKCTX_BENCH_VOLUME", "2"))
    repeat = int(setting("BLKCTX_BENCH_REPEAT", "3"))
    setup_and_prepare()
    if not shutil.which("gnuplot") and os.getuid() == 0:
        if procs.run(["env", "DEBIAN_FRONTEND=noninteractive", "apt-get", "install", "-y", "-q",
                      "--no-install-recommends", "gnuplot-nox"], "bench: installing gnuplot",
                     procs.progress_seconds(), out=sys.stderr) != 0:
            say("bench: cannot install gnuplot-nox; the table comes without a plot")
    kunit_step.build("x86_64", "bench")
    os.makedirs(out, exist_ok=True)
    for pattern in ("table-*.txt", "guest-*.log", "isolation.txt", "waf-*.png"):
        for path in glob.glob(os.path.join(out, pattern)):
            os.unlink(path)
    if setting("BLKCTX_BENCH_WAF", "1") == "1":
        policies = policies_with_journal()
        # the main card's tables (off: only the other cards, in a run of
        # their own; every run starts from a fresh card either way)
        if setting("BLKCTX_BENCH_MAIN", "1") == "1":
            for d in discards:
                bench.waf("discard" + d, policies, "ctxbench.discard=%s ctxbench.seeds=%s"
                          % (d, seeds))
                plot(os.path.join(out, "table-discard%s.txt" % d),
                     os.path.join(out, "waf-discard%s.png" % d))
            # the first seed's runs again, each after different others
            if setting("BLKCTX_BENCH_ISOLATION", "1") == "1":
                first = seeds.split(",")[0]
                bench.waf("reversed", reverse(policies), "ctxbench.discard=%s ctxbench.seeds=%s"
                          % (discards[0], first),
                          workloads=reverse(setting("BLKCTX_BENCH_WORKLOADS", ALL_WORKLOADS)))
                text = isolation(os.path.join(out, "guest-discard%s.log" % discards[0]),
                                 os.path.join(out, "guest-reversed.log"), first)
                with open(os.path.join(out, "isolation.txt"), "w") as f:
                    f.write(text)
                sys.stdout.write(text)
        # other cards: erase block and spare, and fewer contexts (fewer
        # open blocks pinned by a policy that uses all), against the limit
        for name, extra, guest, _ in cards:
            bench.waf(name, sweep_policies, "ctxbench.discard=%s ctxbench.seeds=%s%s"
                      % (discards[0], seeds, extra), none_from=none_from.get(name),
                      workloads=sweep_workloads, **guest)
            plot(os.path.join(out, "table-%s.txt" % name),
                 os.path.join(out, "waf-%s.png" % name))
        with open(os.path.join(out, "results.md"), "w") as f:
            f.write(results(out))
        say("bench: tables, plots and parameters in " + os.path.join(out, "results.md"))
    if setting("BLKCTX_BENCH_REQUESTS", "1") != "1":
        return 0
    # The same workloads, REPEAT times each, on pristine 6.12, on the
    # patched kernel with a card without contexts, and with contexts under
    # none and inode: one kernel's own runs show how far counts vary.
    pristine_kernel()
    logs = {"pristine": [], "nocontexts": [], "contexts": []}
    for i in range(1, repeat + 1):
        for kind, build, policies, extra in (
                ("pristine", "pristine-emu", "default", "ctxbench.seeds=1"),
                ("nocontexts", "kunit", "default", "mmc_emu.max_context_id=0 ctxbench.seeds=1"),
                ("contexts", "kunit", "none,inode", "ctxbench.seeds=1")):
            log = bench.guest(build, "bench-requests", policies, extra)
            kept = os.path.join(out, "requests-%s-%d.log" % (kind, i))
            shutil.copyfile(log, kept)
            logs[kind].append(kept)
    text = requests_table([("pristine 6.12", "default", logs["pristine"]),
                           ("card without contexts", "default", logs["nocontexts"]),
                           ("contexts, none", "none", logs["contexts"]),
                           ("contexts, inode", "inode", logs["contexts"])])
    with open(os.path.join(out, "requests.txt"), "w") as f:
        f.write(text)
    print("write requests and merges the card received, fewest-most over %d runs" % repeat)
    sys.stdout.write(text)
    sys.stdout.flush()
    say("bench: request counts in " + os.path.join(out, "requests.txt"))
    return 0


class Cases:
    """bench-check's cases: counted, each said as it passes or fails."""

    def __init__(self):
        self.passed = self.failed = 0

    def case(self, ok, passed, failed):
        if ok:
            self.passed += 1
            say("bench-check: ok: " + passed)
        else:
            self.failed += 1
            say("bench-check: FAILED: " + failed)

    def replay(self, name, want, args, replay=None):
        """One case of ftlreplay on the host: WANT is a fixed string that its
        output (stdout and stderr) holds."""
        replay = replay or os.path.join(common.BUILD, "ftlreplay")
        try:
            got = subprocess.run([replay] + args, stdout=subprocess.PIPE,
                                 stderr=subprocess.STDOUT, text=True, errors="replace",
                                 stdin=subprocess.DEVNULL, check=False).stdout.rstrip("\n")
        except OSError as e:
            got = str(e)
        self.case(want in got, name, '%s: wanted "%s", got: %s' % (name, want, got))


def hot_and_cold(path):
    """20 hot pages rewritten in turn among 380 cold pages written once."""
    lines, serial = [], 0
    for i in range(380):
        for page in (20 + i, i % 20):
            lines.append("%d W %d 1 0 ok - sbc" % (serial, page))
            serial += 1
    for _ in range(20):
        for page in range(20):
            lines.append("%d W %d 1 0 ok - sbc" % (serial, page))
            serial += 1
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


# ftlreplay's cases on logs of the FTL KUnit suite's geometry: name, what
# its output holds, --count-to (ftl-hot-cold.log: the whole log),
# --placement, the log (canned in tools/selfcheck/, or hot-cold, made). The
# past cannot tell that the two-lifetimes log's final rewrite is final: it
# splits it by the age of the data replaced (two streams) and still moves
# pages.
REPLAY_CASES = [
    ("the logged contexts give the FTL suite's counts",
     "placement=logged host_pages=600 nand_pages=732 gc_moved=132 erases=66 waf=1.220",
     "403", "logged", "two-lifetimes"),
    ("placement by true lifetime moves nothing",
     "placement=future host_pages=600 nand_pages=600 gc_moved=0",
     "403", "future", "two-lifetimes"),
    ("placement learned from the past is not future knowledge",
     "placement=past host_pages=600 nand_pages=736 gc_moved=136",
     "403", "past", "two-lifetimes"),
    ("a log with a hole is refused", "the log has no command 17",
     "403", "logged", "gap"),
    ("hot and cold pages in one stream: GC moves the cold ones",
     "placement=logged host_pages=1160 nand_pages=1476 gc_moved=316",
     "1160", "logged", "hot-cold"),
    ("placement learned from replaced data's lifetime separates them",
     "placement=past host_pages=1160 nand_pages=1160 gc_moved=0",
     "1160", "past", "hot-cold"),
]


def replay_cases(cases):
    """On the host, ftlreplay built from the tree's FTL replays canned logs
    of the geometry of the FTL's KUnit suite: with the logged contexts it
    must give that suite's hand-worked counts, with future knowledge no GC
    at all, and a log with a hole is refused; placement learned from the
    past separates a log's hot pages from its cold ones, but is not future
    knowledge."""
    canned = os.path.join(REPO, "tools", "selfcheck")
    host = os.path.join(common.TREE, "drivers", "mmc", "host")
    replay = os.path.join(common.BUILD, "ftlreplay")
    os.makedirs(common.BUILD, exist_ok=True)
    if procs.run(["gcc", "-Wall", "-O2", "-I" + os.path.join(REPO, "tools/guest/bench/kshim"),
                  "-I" + host, "-DKBUILD_MODNAME=\"mmc_emu\"", "-o", replay,
                  os.path.join(REPO, "tools/guest/bench/ftlreplay.c"),
                  os.path.join(host, "mmc_emu_ftl.c")], "bench-check: ftlreplay",
                 procs.progress_seconds()) != 0:
        raise Failure("bench-check: ftlreplay does not build against the tree's FTL")
    logs = {"two-lifetimes": os.path.join(canned, "ftl-two-lifetimes.log"),
            "gap": os.path.join(canned, "ftl-gap.log"),
            "hot-cold": os.path.join(common.BUILD, "ftl-hot-cold.log")}
    hot_and_cold(logs["hot-cold"])
    for name, want, count_to, placement, log in REPLAY_CASES:
        cases.replay(name, want, ["--sectors", "400", "--page-bytes", "512", "--block-bytes",
                                  "2048", "--op-percent", "18", "--from", "0", "--count-from",
                                  "0", "--count-to", count_to, "--placement", placement,
                                  logs[log]])


PHONE_FILLED = re.compile(r"ctxbench: phone: .*caches_dropped=[1-9][0-9]* .*photos_deleted=[1-9]")


def guest_cases(cases, log):
    """ctxbench fails a run that does not start from a new card or whose
    log does not replay to the card's own counts; a case passes when its run
    printed the replay's verdict, the learned WAF and a limit; and both
    phone runs must have deleted photos and dropped caches (the fill
    control ran)."""
    lines = console_lines(log, "workload")
    for w in ("db", "phone"):
        for p in ("none", "inode"):
            line = next((l for l in lines if l.startswith("workload=%s policy=%s " % (w, p))), "")
            cases.case(re.search(r" replay=exact .* learned_waf=.* limit_waf=", line) is not None,
                       line, "no replayed run of %s under %s in %s" % (w, p, log))
    with open(log, errors="replace") as f:
        phone = sum(1 for line in f if PHONE_FILLED.search(line.replace("\r", "")))
    cases.case(phone == 2, "both phone runs deleted photos and dropped caches",
               "%d of 2 phone runs deleted photos and dropped caches" % phone)


def command_bench_check():
    """The benchmark's machinery, checked in the test command: replays on
    the host (replay_cases), then a short run of db and phone under none
    and inode in the guest (guest_cases)."""
    setup_and_prepare()
    cases = Cases()
    replay_cases(cases)
    # counted now, so that a guest that dies does not lose them
    common.report("bench-check-replay", cases.passed, cases.failed, 0)
    failed = cases.failed
    kunit_step.build("x86_64", "bench-check")
    log = Bench(None, "0.5", "0.5").guest("kunit", "bench-check", "none,inode",
                                           "ctxbench.discard=1 ctxbench.seeds=1",
                                           workloads="db,phone")
    cases = Cases()
    guest_cases(cases, log)
    common.report("bench-check", cases.passed, cases.failed, 0)
    if failed + cases.failed:
        # each failed case is counted already
        say("bench-check: see " + log)
        return 1
    return 0


def main(argv, lock=True):
    parser = argparse.ArgumentParser(prog="bench_step.py", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="what", required=True)
    sub.add_parser("bench")
    sub.add_parser("bench-check")
    p = sub.add_parser("table", help="a console log's result lines as bench's table")
    p.add_argument("log")
    p.add_argument("--none-from", metavar="EARLIER",
                   help="none's runs from EARLIER, the console of another boot of the same "
                   "card and parameters, where LOG has no none")
    opts = parser.parse_args(argv)

    def body():
        if opts.what == "table":
            mine = parameters(opts.log)
            lines = console_lines(opts.log, "workload")
            own = {(fields(line).get("workload"), fields(line).get("policy")) for line in lines}
            loads = sorted({w for w, _ in own if (w, "none") not in own})
            earlier = earlier_none(opts.none_from, loads, {
                k: v for k, v in mine.items() if k != "linux"}) if opts.none_from else None
            sys.stdout.write(table(opts.log, earlier))
            return 0
        if lock:
            common.lock(opts.what)
        return command_bench() if opts.what == "bench" else command_bench_check()

    return common.run_command(opts.what, body)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
