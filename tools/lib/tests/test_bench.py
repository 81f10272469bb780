# SPDX-License-Identifier: GPL-2.0
"""bench_step.py on canned consoles: bench's table, its caption and other
figures, and bench-check's cases and status."""

import contextlib
import io
import os
import re
import shutil
import sys
from unittest import mock

import support

import bench_step

CONSOLE = os.path.join(support.CANNED, "bench-console.log")


def sed(source, dest, pattern, replacement):
    """DEST: SOURCE with sed's s/PATTERN/REPLACEMENT/ on each line."""
    with open(source) as f:
        lines = f.readlines()
    with open(dest, "w") as f:
        f.writelines(re.sub(pattern, replacement, line, count=1) for line in lines)


class TestBenchPlot(support.Case):
    """The plot's data from a table."""

    HEAD = ["# seeds=1,2,3 discard=1",
            "load   policy           runs    WAF        spread vs none  limit    gap"]

    def test_limit_from_none(self):
        """plot: a workload's WAF per policy, +journal last, none's limit

        none's limit even where another policy's row comes first; seq and
        comments left out."""
        lines = self.HEAD + [
            "mail   inode+journal       3  1.100   1.000-1.200     -5%  1.020    10%",
            "mail   none                3  1.015   1.011-1.022       -  1.000      -",
            "mail   inode               3  1.009   1.008-1.010    -40%  1.010    40%",
            "# a comment",
            "seq    none                3  1.000         1.000       -  1.000      -",
            "db     none                3  1.533   1.526-1.537       -  1.002      -"]
        self.assertEqual(bench_step.plot_matrix(lines), (
            ["none", "inode"], ["none", "inode", "inode+journal"],
            ["load none inode inode+journal limit",
             "mail 1.015 1.009 1.100 1.000",
             "db 1.533 ? ? 1.002"]))

    def test_limit_without_none(self):
        """plot: without none, the limit of the first policy's runs

        A table of one policy still shows a limit."""
        lines = self.HEAD + [
            "mail   lifetime            3  1.007   1.004-1.010       -  1.000      -",
            "mail   size                3  1.009   1.006-1.014       -  1.003      -",
            "phone  lifetime            3  1.000         1.000       -      -      -"]
        self.assertEqual(bench_step.plot_matrix(lines)[2], [
            "load lifetime size limit", "mail 1.007 1.009 1.000", "phone 1.000 ? ?"])


class TestBenchTable(support.Case):
    """Bench's table on a canned console."""

    def test_table(self):
        """The rows over seeds (mean, spread, the change against none,
        limit and gap, learned and its gap; seq, whose file is rewritten in
        place, is not compared with none), ctxbench's other lines and the
        kernel's ignored."""
        want = "\n".join((
            "load   policy           runs    WAF        spread vs none  limit    gap learned  l.gap"
            " host pages   GC moves   erases  requests   merges open",
            "db     none                2  1.300   1.200-1.400     +0%  1.000     0%   1.100    67%"
            "       1000        300       11       101       51  2.0",
            "db     inode               2  1.150   1.100-1.200    -50%  1.000    50%   1.050    83%"
            "       1000        150        8       100       50 15.5",
            "seq    none                2  1.150   1.100-1.200       -      -      -       -      -"
            "        500         75        2        51       10  2.0",
        ))
        # a process: the table command's main installs its signal handlers
        done = support.run([sys.executable, "-B", os.path.join(support.LIB, "bench_step.py"),
                            "table", CONSOLE])
        self.same("bench_table: means, spreads, gaps to the limit and learned", want,
                  done.out.rstrip("\n"))

    def test_one_value(self):
        """Seeds that agree: the spread is their one value, not a range."""
        agree = self.path("agree.log")
        sed(CONSOLE, agree, r"waf=1\.200 open_blocks=15", "waf=1.100 open_blocks=15")
        done = support.run([sys.executable, "-B", os.path.join(support.LIB, "bench_step.py"),
                            "table", agree])
        rows = [line.split() for line in done.out.split("\n")]
        self.same("bench_table: the seeds agree: one value as the spread", "1.100 1.100",
                  " ".join(row[3] + " " + row[4] for row in rows
                           if row[:2] == ["db", "inode"]) or done.out)


class TestBenchFigures(support.Case):
    """Bench's other figures from canned consoles."""

    def test_figures(self):
        """The caption of a table, the isolation table (the same seed in
        two runs), the request counts over runs (fewest-most), the policies
        with and without journal_context."""
        a, b = CONSOLE, self.path("b.log")
        sed(a, self.path("b1.log"), r"waf=1\.100 open_blocks=16", "waf=1.125 open_blocks=16")
        sed(self.path("b1.log"), b, r"write_requests=100 write_merges=50 waf=1\.200 open_blocks=15",
            "write_requests=97 write_merges=48 waf=1.200 open_blocks=15")
        table = b + ".txt"

        def figures():
            with open(table, "w") as f:
                f.write("# " + bench_step.console_lines(a, "seeds")[0] + "\n" +
                        bench_step.table(a))
            out = [bench_step.caption(table) + "\n", bench_step.isolation(a, b, "1"),
                   bench_step.requests_table([("one", "none", [a]), ("two", "inode", [a, b])])]
            for journal in ("1", "0"):
                with mock.patch.dict(os.environ, BLKCTX_BENCH_POLICIES="a,b",
                                     BLKCTX_BENCH_JOURNAL=journal):
                    out.append(bench_step.policies_with_journal() + "\n")
            return "".join(out).rstrip("\n")

        self.same("bench: caption, isolation, request counts, policies", """\
64 MiB card, 256 KiB erase blocks, 4 KiB pages, 7% spare (18 blocks), 15 streams; fs 80% full, \
discard on; warmup 1.0, counted 1.0 card sizes; seeds 1,2
load   policy             in order   reversed    diff
db     none                  1.200      1.200  +0.000
db     inode                 1.100      1.125  +0.025
writes                      one                    two
db                      100-102                 97-100
seq                       50-52                      -
seq-file                      7                      -

merges                      one                    two
db                        50-52                  48-50
seq                       10-11                      -
a,a+journal,b,b+journal
a,b""", support.caught(figures))


# bench-check's command with its replays, setup and guest stood in for:
# the console it "booted" is argv[1]
CHECK = """import sys, bench_step
bench_step.setup_and_prepare = lambda: None
bench_step.kunit_step.build = lambda arch, who: None
def replays(cases):
    cases.case(True, "a replay", "")
    cases.case(False, "", "a replay")
bench_step.replay_cases = replays
bench_step.Bench.guest = lambda *args, **kwargs: sys.argv[1]
print("status", bench_step.main(["bench-check"], lock=False))
"""


class TestBenchCheck(support.Case):
    """Bench-check's cases on a guest's console."""

    def consoles(self):
        """The canned console with both phone runs added (full), with db
        under none's replay differing (differs), and without inode's runs
        (noinode)."""
        full = self.path("full.log")
        shutil.copyfile(CONSOLE, full)
        with open(full, "a") as f:
            for line in ("workload=phone policy=none", "workload=phone policy=inode"):
                f.write("    ctxbench: %s seed=1 waf=1.5 replay=exact learned_nand_pages=9 "
                        "learned_waf=1.2 limit_nand_pages=8 limit_waf=1.0\n" % line)
                f.write("    ctxbench: phone: transactions=9 caches_dropped=2 photos=2 "
                        "photos_deleted=1\n")
        sed(full, self.path("differs.log"), r"(workload=db policy=none seed=1 .*)replay=exact",
            r"\1replay=differs")
        with open(full) as f:
            kept = [line for line in f if "policy=inode" not in line]
        with open(self.path("noinode.log"), "w") as f:
            f.writelines(kept)
        return full

    def test_guest_cases(self):
        """A run of db and phone under none and inode passes when it
        printed the replay's verdict (exact), the learned WAF and a limit;
        both phone runs must have dropped caches and deleted photos."""
        self.consoles()

        def counts(log):
            cases = bench_step.Cases()
            # the cases say themselves on standard error: not what is compared
            with contextlib.redirect_stderr(io.StringIO()):
                bench_step.guest_cases(cases, log)
            return "%d %d" % (cases.passed, cases.failed)

        self.same("bench-check: the guest's runs "
                  "(canned: no phone; all; a replay that differs; no inode)",
                  "2 3 5 0 4 1 3 2",
                  " ".join(support.caught(lambda: counts(log)) for log in (
                      CONSOLE, self.path("full.log"), self.path("differs.log"),
                      self.path("noinode.log"))))

    def test_command(self):
        """The command: what it reports to test (each failed case once) and
        its status, the replays and the guest stood in for."""
        full = self.consoles()
        results = self.path("results")
        out = []
        for log in (full, CONSOLE):
            self.write("results", "")
            # a process: main installs its signal handlers and reports to
            # $BLKCTX_RESULTS
            done = support.python(CHECK, log, env={"BLKCTX_RESULTS": results}, split=True)
            out.append(done.out.rstrip("\n"))
            if done.status:
                out.append("status %d" % done.status)
            with open(results) as f:
                out.append(",".join(f.read().splitlines()))
        self.same("bench-check: each failed case counted once, the status",
                  "status 1\nbench-check-replay 1 1 0,bench-check 5 0 0\n"
                  "status 1\nbench-check-replay 1 1 0,bench-check 2 3 0", "\n".join(out))

