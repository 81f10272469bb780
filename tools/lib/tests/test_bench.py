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


    def test_none_from(self):
        """--none-from: another boot's none runs join the table where the
        log has none of a workload, as if run in it (vs none, gap and
        l.gap against them; none first in its workload), never where it
        has, nor of a workload it has not; a console without one none run
        a seed, or of another card or run, is refused."""
        nonone, earlier = self.path("nonone.log"), self.path("earlier.log")
        with open(CONSOLE) as f:
            kept = [line for line in f if "workload=db policy=none" not in line]
        with open(nonone, "w") as f:
            f.writelines(kept)
        sed(CONSOLE, earlier, r"(policy=none seed=1 .*) waf=1\.200", r"\1 waf=1.600")
        with open(earlier, "a") as f:
            f.write("    ctxbench: workload=mail policy=none seed=1 waf=1.100\n")
        inode, partial = self.path("inode.log"), self.path("partial.log")
        with open(inode, "w") as f:
            f.writelines(line for line in kept if "policy=none" not in line)
        with open(earlier) as f:
            with open(partial, "w") as g:
                g.writelines(line for line in f if "db policy=none seed=2" not in line)
        sed(earlier, self.path("op.log"), "op_percent=7", "op_percent=14")
        with open(earlier) as f:
            with open(self.path("twice.log"), "w") as g:
                g.writelines(line * (2 if "db policy=none seed=1" in line else 1) for line in f)
        out = []
        for log, none_from in ((nonone, earlier), (CONSOLE, earlier), (nonone, inode),
                               (nonone, partial), (nonone, self.path("op.log")),
                               (nonone, self.path("twice.log")), (CONSOLE, inode)):
            done = support.run([sys.executable, "-B", os.path.join(support.LIB, "bench_step.py"),
                                "table", log, "--none-from", none_from])
            out.append(" ".join(line.split()[0] + ":" + line.split()[1] + ":" +
                                ",".join(line.split()[3:10])
                                for line in done.out.split("\n")[1:] if line)
                       if not done.status else "status %d %s" % (
                           done.status, done.out.strip().replace(self.path(""), "T/")))
        self.same("bench_table: none from another boot where the log has none", """\
db:none:1.500,1.400-1.600,+0%,1.000,0%,1.100,80% db:inode:1.150,1.100-1.200,-70%,1.000,70%,\
1.050,90% seq:none:1.150,1.100-1.200,-,-,-,-,-
db:none:1.300,1.200-1.400,+0%,1.000,0%,1.100,67% db:inode:1.150,1.100-1.200,-50%,1.000,50%,\
1.050,83% seq:none:1.150,1.100-1.200,-,-,-,-,-
status 1 blkctx: error: bench: T/inode.log: not one run of none a seed (db seed 1: 0, db seed 2: 0)
status 1 blkctx: error: bench: T/partial.log: not one run of none a seed (db seed 2: 0)
status 1 blkctx: error: bench: T/op.log: another card or run: op_percent=14, not 7
status 1 blkctx: error: bench: T/twice.log: not one run of none a seed (db seed 1: 2)
status 1 blkctx: error: bench: T/inode.log: not one run of none a seed""",
                  "\n".join(out))


# bench's command with setup and the guest stood in for: the console it
# "booted" is argv[1], and each boot is said
BENCH = """import sys, bench_step
bench_step.setup_and_prepare = lambda: None
bench_step.kunit_step.build = lambda arch, who: None
bench_step.shutil.which = lambda name: "/usr/bin/" + name
def guest(*args, **kwargs):
    print("booted")
    return sys.argv[1]
bench_step.Bench.guest = guest
print("status", bench_step.main(["bench"], lock=False))
"""


class TestBenchCommand(support.Case):
    """bench's command on a canned console."""

    def test_none_from(self):
        """BLKCTX_BENCH_NONE_FROM: the other cards' none from an earlier
        run's boots of the same cards where the sweep has no none, said in
        the caption with that boot's kernel if another; checked for every
        card, workload, seed and parameter before the first boot, and the
        whole parameters line after it (another: not used, said); not used
        where the sweep runs none or no table is made; never this run's
        own directory."""
        nonone = self.path("nonone.log")
        with open(CONSOLE) as f:
            kept = [line for line in f if "workload=db policy=none" not in line]
        with open(nonone, "w") as f:
            f.writelines(kept)
        earlier = self.path("earlier")
        os.makedirs(earlier)
        sed(CONSOLE, os.path.join(earlier, "guest-geometry-256-7.log"),
            r"(policy=none seed=1 .*) waf=1\.200", r"\1 waf=1.600")
        shutil.copyfile(os.path.join(earlier, "guest-geometry-256-7.log"),
                        os.path.join(earlier, "guest-contexts-4.log"))
        os.makedirs(self.path("other"))
        sed(CONSOLE, self.path("other", "guest-geometry-256-7.log"), "physical_blocks=274",
            "physical_blocks=275")
        os.makedirs(self.path("kernel"))
        sed(CONSOLE, self.path("kernel", "guest-geometry-256-7.log"), "^KTAP version 1",
            "Linux version 6.12.1-gabc (root@vm) (gcc 12) #2 SMP\nKTAP version 1")
        out = []
        for n, (policies, cards, ids, loads, discard, seeds, none_from, *more) in enumerate((
                ("inode", "256:7", "", "db", "1", "1,2", earlier),
                ("inode", "256:7,128:7", "", "db", "1", "1,2", earlier),
                ("inode", "256:7", "", "db,mail", "1", "1,2", earlier),
                ("inode", "256:7", "", "db", "0", "1", earlier),
                ("inode", "", "4", "db", "1", "1,2", earlier),
                ("inode", "", "4", "db", "1", "1,2", earlier, {"BLKCTX_BENCH_BLOCK": "128"}),
                ("inode", "256:7", "", "db", "1", "1,2", earlier, {"BLKCTX_BENCH_WARMUP": "2"}),
                ("inode", "256:7", "", "db", "1", "1,2", self.path("other")),
                ("inode", "256:7", "", "db", "1", "1,2", self.path("kernel")),
                ("inode", "256:7", "", "db", "1", "1,2", self.path("out-9")),
                ("none,inode", "256:7", "", "db", "1", "1,2", earlier),
                ("inode", "256:7", "", "db", "1", "1,2", self.path("nowhere"),
                 {"BLKCTX_BENCH_WAF": "0"}))):
            results = self.path("out-%d" % n, "results.md")
            env = {"BLKCTX_BENCH_DISCARD": discard, "BLKCTX_BENCH_SEEDS": seeds,
                   "BLKCTX_BENCH_WARMUP": "1", "BLKCTX_BENCH_VOLUME": "1",
                   "BLKCTX_BENCH_CARD": "64", "BLKCTX_BENCH_FILL": "80",
                   "BLKCTX_BENCH_BLOCK": "256", "BLKCTX_BENCH_OP": "7",
                   "BLKCTX_BENCH_MAIN": "0", "BLKCTX_BENCH_GEOMETRIES": cards,
                   "BLKCTX_BENCH_CONTEXT_IDS": ids, "BLKCTX_BENCH_SWEEP_POLICIES": policies,
                   "BLKCTX_BENCH_SWEEP_WORKLOADS": loads,
                   "BLKCTX_BENCH_REQUESTS": "0", "BLKCTX_BENCH_WAF": "1",
                   "BLKCTX_BENCH_NONE_FROM": none_from,
                   "BLKCTX_BENCH_OUT": os.path.dirname(results)}
            env.update(*more)
            done = support.python(BENCH, nonone, env=env)
            lines = [line.replace(self.path(""), "T/") for line in done.out.split("\n")
                     if line.startswith(("booted", "status", "blkctx: error", "blkctx: bench: B",
                                         "blkctx: bench: /"))]
            if os.path.exists(results):
                with open(results) as f:
                    for line in f:
                        # the caption's end; db's policy, runs, WAF and gap
                        if line.startswith("64 MiB"):
                            lines.append(line.split("; ")[-1].strip().replace(
                                self.path(""), "T/"))
                        elif line.startswith("db "):
                            lines.append(" ".join(line.split()[1:4] + line.split()[7:8]))
            out.append("\n".join(lines))
        self.same("bench: none from an earlier run's boots", """\
booted
status 0
none's runs from another boot: T/earlier/guest-geometry-256-7.log
none 2 1.500 0%
inode 2 1.150 70%
blkctx: error: bench: T/earlier/guest-geometry-128-7.log: No such file or directory
status 1
blkctx: error: bench: T/earlier/guest-geometry-256-7.log: not one run of none a seed \
(mail seed 1: 0, mail seed 2: 0)
status 1
blkctx: error: bench: T/earlier/guest-geometry-256-7.log: another card or run: discard=1, not 0; \
seeds=1,2, not 1
status 1
blkctx: error: bench: T/earlier/guest-contexts-4.log: another card or run: streams=15, not 4
status 1
blkctx: error: bench: T/earlier/guest-contexts-4.log: another card or run: block_kib=256, not 128; \
streams=15, not 4
status 1
blkctx: error: bench: T/earlier/guest-geometry-256-7.log: another card or run: warmup=1.0, not 2.0
status 1
booted
blkctx: bench: T/other/guest-geometry-256-7.log: not used, another card or run: \
physical_blocks=275, not 274
status 0
seeds 1,2
inode 2 1.150 -
booted
status 0
none's runs from another boot: T/kernel/guest-geometry-256-7.log, kernel 6.12.1-gabc#2
none 2 1.300 0%
inode 2 1.150 50%
blkctx: error: BLKCTX_BENCH_NONE_FROM: an earlier run's BLKCTX_BENCH_OUT, not this run's (its \
guest logs are removed first)
status 1
blkctx: bench: BLKCTX_BENCH_NONE_FROM not used: no other card runs without none
booted
status 0
seeds 1,2
inode 2 1.150 -
blkctx: bench: BLKCTX_BENCH_NONE_FROM not used: no other card runs without none
status 0""", "\n".join(out))
        self.same("bench: each card's console kept beside its table", "True",
                  str(os.path.isfile(self.path("out-0", "guest-geometry-256-7.log"))))


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

