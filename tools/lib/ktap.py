#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Count the KTAP a guest's /init printed, with the tree's own kunit_parser.

The guest prints KTAP version 1 with each kselftest's TAP nested under it,
four spaces a level, or with the "# " that kselftest's runner puts before
each line of a test.  kunit_parser reads nesting from headers and plans, not
from indentation, and loops or fails on a plan that does not match what
follows.  So the lines are first made explicit: the prefixes become depth;
each block, the top one too, gets a header if it has none and a plan equal
to the results it holds (the plan it declared is kept and checked here);
"# Subtest:" lines, headers that open no block and plans beyond a block's
first become plain diagnostics; results are rewritten in a form kunit_parser
accepts whatever their name.

Prints "passed failed skipped", then "FAIL name" for each failure.  Leaves
count: passed, failed ("not ok", a TODO directive included, as in
kunit_parser), or skipped (a SKIP directive).  One failure more for a failed
test none of whose subtests failed (it crashed, or exited non-zero), for a
test whose kselftest "# Totals:" line counts failures that none of its
results shows, for nesting that skips a level or is not four spaces a
level, and, when FINISHED is 1 (the
guest reached its end), for each plan not met; otherwise the crash or hang
is the failure, counted by the caller.
"""
import argparse
import io
import os
import re
import sys
from typing import Dict, List, Optional, Tuple

RESULT = re.compile(r'^(not )?ok [0-9]+')
PLAN = re.compile(r'^1\.\.([0-9]+)')
VERSION = re.compile(r'^K?TAP version [0-9]+$')
SUBTEST = re.compile(r'^# Subtest: ')
RUNNER_PREFIXED = re.compile(r'^ *((not ok|ok|1\.\.)[ 0-9]|# Totals: |K?TAP version )')
TOTALS = re.compile(r'^# Totals: ')
TOTALS_FAILED = re.compile(r'[ \t](fail|error):[1-9]')
RESULT_PREFIX = re.compile(r'^(not )?ok ([0-9]+) *(- )?')
DIRECTIVE = re.compile(r'\s+#(\s.*)?$')
SKIP = re.compile(r'(^|\s)#\s*skip', re.I)
GUEST_HEADER = '# blkctx-guest:'
# kunit_parser reads any line with this in front as a diagnostic
PLAIN = '| '


def depth_of(line: str) -> Tuple[int, str]:
	"""The nesting of a line, and the line without its prefixes."""
	depth = 0
	while True:
		if line.startswith('    '):
			line = line[4:]
		elif line.startswith('# ') and RUNNER_PREFIXED.match(line[2:]):
			line = line[2:]
		else:
			return depth, line
		depth += 1


def kind_of(rest: str) -> Optional[str]:
	"""What a line without its prefixes is to KTAP, or None for text."""
	if RESULT.match(rest):
		return 'result'
	if PLAN.match(rest):
		return 'plan'
	if VERSION.match(rest):
		return 'version'
	if SUBTEST.match(rest):
		return 'subtest'
	return None


def start_of(lines: List[str]) -> Optional[int]:
	"""Where /init's KTAP starts: its header line, else the first one."""
	for i in range(len(lines) - 1):
		if lines[i] == 'KTAP version 1' and lines[i + 1].startswith(GUEST_HEADER):
			return i
	return lines.index('KTAP version 1') if 'KTAP version 1' in lines else None


class Normalized:
	"""The lines for kunit_parser, and what each stands for."""

	def __init__(self) -> None:
		self.lines: List[str] = []
		# the raw line of each result and the declared plan of each block,
		# by the index of the line kunit_parser gets for it
		self.raw: Dict[int, str] = {}
		self.problems: List[str] = []

	def emit(self, line: str, raw: Optional[str] = None) -> None:
		index = len(self.lines)
		if RESULT.match(line):
			skip = ' # SKIP' if SKIP.search(line) else ''
			self.raw[index] = line
			line = '%s r%d%s' % (RESULT.match(line).group(0), index, skip)
		elif raw is not None:
			self.raw[index] = raw
		self.lines.append(line)

	def plain(self, line: str) -> None:
		self.lines.append(PLAIN + line)


def normalize(lines: List[str]) -> Normalized:
	"""The log from /init's "KTAP version 1" on, its nesting made explicit."""
	out = Normalized()
	start = start_of(lines)
	if start is None:
		return out
	lines = lines[start:]
	parsed = [list(depth_of(line)) for line in lines]
	consumed = set()

	def open_block(i: int, depth: int) -> Tuple[int, str]:
		"""The results in the block that line I opens at DEPTH, its plan."""
		declared = ''
		results = 0
		# a nested block still open at the end (the guest stopped in it)
		# is one more test to read
		open_below = False
		for j in range(i, len(parsed)):
			d, rest = parsed[j]
			kind = kind_of(rest)
			if kind is None or kind == 'subtest':
				continue
			if d < depth:
				break
			if d > depth:
				open_below = True
			elif kind == 'plan':
				declared = declared or rest
				consumed.add(j)
			elif kind == 'result':
				results += 1
				open_below = False
		return results + open_below, declared

	# the top block: the "KTAP version 1" line itself opens it
	results, declared = open_block(1, 0)
	out.emit('KTAP version 1')
	out.emit('1..%d' % results, declared)
	cur = 0
	for i in range(1, len(parsed)):
		depth, rest = parsed[i]
		kind = kind_of(rest)
		if kind is None and kind_of(rest.lstrip()) is not None:
			# indented, but not by four spaces a level: not read
			out.problems.append('malformed KTAP: line %d is indented by %d spaces'
					    % (start + i + 1, len(lines[i]) - len(lines[i].lstrip())))
		if kind is None or kind == 'subtest':
			out.plain(lines[i])
			continue
		if depth > cur + 1:
			# no level may be skipped: the block moves up to the next
			out.problems.append('malformed KTAP: line %d is %d levels below the one before it'
					    % (start + i + 1, depth - cur))
			shift = depth - cur - 1
			for j in range(i, len(parsed)):
				if kind_of(parsed[j][1]) is not None and parsed[j][0] < depth:
					break
				if parsed[j][0] >= depth:
					parsed[j][0] -= shift
			depth = cur + 1
		if depth > cur:
			results, declared = open_block(i, depth)
			out.emit(rest if kind == 'version' else 'KTAP version 1')
			out.emit('1..%d' % results, declared)
			cur = depth
			if kind != 'result':
				continue
		elif kind != 'result':
			# a plan or header that opens no block: the block's plan is
			# the first, which it declared; the others are text
			out.plain(lines[i])
			continue
		cur = depth
		out.emit(rest)
	# kunit_parser reads its last line again at the end of its input
	out.plain('end of log')
	return out


def parse(tree: str, norm: Normalized):
	"""kunit_parser's tree of the normalized lines."""
	sys.path.insert(0, os.path.join(tree, 'tools', 'testing', 'kunit'))
	# pylint: disable=import-outside-toplevel,import-error
	import kunit_parser
	import kunit_printer

	original_plan = kunit_parser.parse_test_plan

	def parse_test_plan(stream, test, *args, **kwargs):
		index = stream.line_number()
		found = original_plan(stream, test, *args, **kwargs)
		if found:
			test.declared_plan = norm.raw.get(index, '')
		return found

	kunit_parser.parse_test_plan = parse_test_plan
	kunit_parser.stdout = kunit_printer.Printer(io.StringIO())
	stream = kunit_parser.LineStream(lines=iter(enumerate(norm.lines)))
	return kunit_parser.parse_test(stream, 0, [], False)


def raw_result(test, norm: Normalized) -> Optional[str]:
	"""The result line that named TEST, if it had one."""
	match = re.fullmatch(r'r([0-9]+)', test.name or '')
	return norm.raw.get(int(match.group(1))) if match else None


def has_result(test, norm: Normalized) -> bool:
	"""Whether TEST, or a test under it, had a result line."""
	return raw_result(test, norm) is not None or \
		any(has_result(t, norm) for t in test.subtests)


class Counter:
	"""The counts of one log, and the names of its failures."""

	def __init__(self, norm: Normalized, finished: bool) -> None:
		self.norm = norm
		self.finished = finished
		self.passed = self.failed = self.skipped = 0
		self.failures: List[str] = []

	def fail(self, what: str) -> None:
		self.failed += 1
		self.failures.append(what)

	def plan_missed(self, test, results: int, required: bool) -> Optional[str]:
		"""What is wrong with the plan TEST's block declared, if anything;
		only the top block must have one."""
		if not self.finished:
			return None
		match = PLAN.match(getattr(test, 'declared_plan', ''))
		if not match:
			return 'no plan but %d results' % results if results and required else None
		if int(match.group(1)) != results:
			return 'plan 1..%s but %d results' % (match.group(1), results)
		return None

	def totals_failed(self, test, depth: int) -> bool:
		"""Whether a kselftest "# Totals:" line of TEST counts failures."""
		for line in test.log:
			if line.startswith(PLAIN):
				line = line[len(PLAIN):]
			d, rest = depth_of(line)
			if d == depth + 1 and TOTALS.match(rest) and TOTALS_FAILED.search(rest):
				return True
		return False

	def walk(self, test, depth: int, parent: str) -> bool:
		"""Count TEST, at DEPTH; True if a failure was counted in it."""
		raw = raw_result(test, self.norm)
		if raw is None:
			name = parent + ': (no result line)' if parent else '(no result line)'
		else:
			match = RESULT_PREFIX.match(raw)
			name = DIRECTIVE.sub('', raw[match.end():]) or '#' + match.group(2)
			name = parent + ': ' + name if parent else name
		subtests = [t for t in test.subtests if has_result(t, self.norm)]
		bad = False
		for sub in subtests:
			bad = self.walk(sub, depth + 1, name) or bad
		missed = self.plan_missed(test, len(subtests), False)
		if missed:
			self.fail('%s (%s)' % (name, missed))
			bad = True
		if raw is None:
			return bad
		notok = raw.startswith('not ok')
		skip = SKIP.search(raw)
		totals = self.totals_failed(test, depth)
		if not subtests and not totals:
			if skip:
				self.skipped += 1
			elif notok:
				self.fail(name)
				bad = True
			else:
				self.passed += 1
		elif not bad and totals:
			self.fail(name + ' (its totals count failures)')
			bad = True
		elif notok and not skip and not bad:
			self.fail(name + ' (no subtest failed)')
			bad = True
		return bad


def count(tree: str, log_lines: List[str], finished: bool) -> Counter:
	"""The counts of a guest's console, given as lines."""
	norm = normalize([line.rstrip('\r\n') for line in log_lines])
	counter = Counter(norm, finished)
	if not norm.lines:
		return counter
	top = parse(tree, norm)
	results = [t for t in top.subtests if has_result(t, norm)]
	for test in results:
		counter.walk(test, 0, '')
	missed = counter.plan_missed(top, sum(raw_result(t, norm) is not None
					      for t in results), True)
	if missed:
		counter.fail(missed)
	for problem in norm.problems:
		counter.fail(problem)
	return counter


def main() -> int:
	parser = argparse.ArgumentParser(
		description='Count the KTAP a blkctx guest printed, with the tree\'s kunit_parser.')
	parser.add_argument('tree', help='the kernel tree, for tools/testing/kunit')
	parser.add_argument('log', help="the guest's console log")
	parser.add_argument('finished', choices=['0', '1'],
			    help='1 if the guest reached the end of its tests')
	args = parser.parse_args()
	with open(args.log, encoding='utf-8', errors='replace') as log:
		counter = count(args.tree, log.readlines(), args.finished == '1')
	print(counter.passed, counter.failed, counter.skipped)
	for what in counter.failures:
		print('FAIL ' + what)
	return 0


if __name__ == '__main__':
	sys.exit(main())
