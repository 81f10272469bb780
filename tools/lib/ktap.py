#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Count the KTAP a guest's /init printed, with the tree's own kunit_parser.

Usage: ktap.py TREE LOG FINISHED

The guest prints KTAP version 1 with each kselftest's TAP nested under it,
four spaces a level, or with the "# " that kselftest's runner puts before
each line of a test.  kunit_parser reads nesting from headers and plans,
not from indentation, so the lines are first given what it needs: the
prefixes become depth, and a nested block without a header or a plan gets
them ("KTAP version 1", "1..N" for the N results it holds).

Prints "passed failed skipped", then "FAIL name" for each failure.  Leaves
count; besides a failed or skipped leaf, one failure more for a failed
test whose subtests all passed (it crashed, or exited non-zero), for a
test whose kselftest "# Totals:" line counts failures that none of its
results shows, and, when FINISHED is 1 (the guest reached its end), for
each plan not met; otherwise the crash or hang is the failure, counted by
the caller.
"""
import io
import os
import re
import sys

RESULT = re.compile(r'^(not )?ok [0-9]+')
PLAN = re.compile(r'^1\.\.([0-9]+)')
HEADER = re.compile(r'^(K?TAP version [0-9]+|# Subtest: )')
RUNNER_PREFIXED = re.compile(r'^ *(not ok|ok|1\.\.)[ 0-9]')
TOTALS = re.compile(r'^# Totals: ')
TOTALS_FAILED = re.compile(r'[ \t](fail|error):[1-9]')
RESULT_PREFIX = re.compile(r'^(not )?ok [0-9]+ *(- )?')
SKIP = re.compile(r'#[ \t]*skip', re.I)


def depth_of(line):
	"""The nesting of a line and the line without its prefixes."""
	depth = 0
	while True:
		if line.startswith('    '):
			line = line[4:]
		elif line.startswith('# ') and RUNNER_PREFIXED.match(line[2:]):
			line = line[2:]
		else:
			return depth, line
		depth += 1


def structural(rest):
	return bool(RESULT.match(rest) or PLAN.match(rest) or HEADER.match(rest))


def canonical(rest, index):
	"""A result line as kunit_parser reads it whatever its name: "r" and the
	line's index, and the SKIP directive that the line has in any case.
	"""
	match = RESULT.match(rest)
	skip = ' # SKIP' if SKIP.search(rest) else ''
	return '%s r%d%s' % (match.group(0), index, skip)


def normalize(lines):
	"""The log from its first "KTAP version 1" line on, nesting made explicit.

	Returns the lines for kunit_parser and, for each, the line it stands
	for: structural lines (headers, plans, results) without their prefixes,
	results in a canonical form; others as they are, for their depth.
	"""
	try:
		start = lines.index('KTAP version 1')
	except ValueError:
		return [], []
	parsed = [depth_of(line) for line in lines[start:]]
	out, raw = [], []

	def emit(line, rest):
		if RESULT.match(line):
			line = canonical(line, len(out))
		out.append(line)
		raw.append(rest)

	cur = 0
	skipped = set()
	for i, (depth, rest) in enumerate(parsed):
		if i in skipped:
			continue
		if not structural(rest):
			emit(lines[start + i], lines[start + i])
			continue
		if depth > cur:
			# a new nested block: its plan is the number of results it
			# holds, as its indentation shows, so that kunit_parser never
			# takes the parent's result line for a missing subtest; the
			# plan it declared is kept for the check
			declared = ''
			results = 0
			for j in range(i, len(parsed)):
				d, r = parsed[j]
				if not structural(r):
					continue
				if d < depth:
					break
				if d == depth and PLAN.match(r):
					declared = declared or r
					skipped.add(j)
				elif d == depth and RESULT.match(r):
					results += 1
			for _ in range(cur + 1, depth):
				emit('KTAP version 1', '')
			if HEADER.match(rest):
				emit(rest, rest)
			else:
				emit('KTAP version 1', '')
			emit('1..%d' % results, declared)
			cur = depth
			if HEADER.match(rest) or i in skipped:
				continue
		elif depth > 0 and PLAN.match(rest):
			# a second plan in a block: not a plan kunit_parser must follow
			continue
		cur = depth
		emit(rest, rest)
	return out, raw


def parse(tree, lines, raw):
	"""kunit_parser's tree of the normalized lines; a result's raw line kept."""
	sys.path.insert(0, os.path.join(tree, 'tools', 'testing', 'kunit'))
	# pylint: disable=import-outside-toplevel,import-error
	import kunit_parser
	import kunit_printer

	original = kunit_parser.parse_test_result

	def parse_test_result(stream, test, expected_num):
		index = stream.line_number()
		found = original(stream, test, expected_num)
		if found:
			test.raw_result = raw[index]
		return found

	original_plan = kunit_parser.parse_test_plan

	def parse_test_plan(stream, test):
		index = stream.line_number()
		found = original_plan(stream, test)
		if found:
			test.raw_plan = raw[index]
		return found

	kunit_parser.parse_test_result = parse_test_result
	kunit_parser.parse_test_plan = parse_test_plan
	kunit_printer.stdout._output = io.StringIO()
	stream = kunit_parser.LineStream(lines=iter(enumerate(lines)))
	main = kunit_parser.parse_test(stream, 0, [], False)
	leftover = 0
	while stream:
		if RESULT.match(stream.pop().lstrip()):
			leftover += 1
	return main, leftover


def printed(test):
	"""Whether TEST, or a test under it, had a result line."""
	return hasattr(test, 'raw_result') or any(printed(t) for t in test.subtests)


class Counter:
	def __init__(self, finished):
		self.finished = finished
		self.passed = self.failed = self.skipped = 0
		self.failures = []

	def fail(self, what):
		self.failed += 1
		self.failures.append(what)

	def plan_missed(self, test, results):
		"""What is wrong with the plan TEST's block declared, if anything."""
		match = PLAN.match(getattr(test, 'raw_plan', ''))
		if self.finished and match and int(match.group(1)) != results:
			return 'plan 1..%s but %d results' % (match.group(1), results)
		return None

	def totals_failed(self, test, depth):
		for line in test.log:
			d, rest = depth_of(line)
			if d == depth + 1 and TOTALS.match(rest) and TOTALS_FAILED.search(rest):
				return True
		return False

	def walk(self, test, depth):
		"""Count TEST, at DEPTH; True if a failure was counted in it."""
		subtests = [t for t in test.subtests if printed(t)]
		bad = False
		for sub in subtests:
			bad = self.walk(sub, depth + 1) or bad
		raw = getattr(test, 'raw_result', None)
		missed = self.plan_missed(test, len(subtests))
		if raw is None:
			return bad
		name = RESULT_PREFIX.sub('', raw.strip(), count=1)
		notok = raw.lstrip().startswith('not ok')
		skip = SKIP.search(raw)
		totals = self.totals_failed(test, depth)
		if missed:
			self.fail('%s (%s)' % (name, missed))
			bad = True
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
			self.fail(name + ' (its subtests passed)')
			bad = True
		return bad


def count(tree, log_lines, finished):
	lines, raw = normalize([l.rstrip('\n').rstrip('\r') for l in log_lines])
	counter = Counter(finished)
	if not lines:
		return counter
	main, leftover = parse(tree, lines, raw)
	top = [t for t in main.subtests if printed(t)]
	for sub in top:
		counter.walk(sub, 0)
	results = sum(hasattr(t, 'raw_result') for t in top) + leftover
	plan = main.expected_count or 0
	if finished and plan != results:
		counter.fail('plan 1..%d but %d results' % (plan, results))
	return counter


def main():
	if len(sys.argv) != 4:
		sys.exit(__doc__.split('\n\n')[1])
	tree, log, finished = sys.argv[1], sys.argv[2], sys.argv[3] == '1'
	with open(log, errors='replace') as f:
		counter = count(tree, f.readlines(), finished)
	print(counter.passed, counter.failed, counter.skipped)
	for what in counter.failures:
		print('FAIL ' + what)
	return 0


if __name__ == '__main__':
	sys.exit(main())
