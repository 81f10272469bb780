# shellcheck shell=bash
# The kernel tree: dependencies, preparation, export, and checks on the patches.

# Packages for the host side (build, KUnit, QEMU, checks).
HOST_PACKAGES="linux-source-6.12 build-essential gcc-arm-linux-gnueabihf
	binutils-arm-linux-gnueabihf flex bison bc libelf-dev libssl-dev cpio
	xz-utils rsync kmod ccache dwarves sparse python3 python3-ply python3-git perl git
	qemu-system-x86 qemu-system-arm shellcheck b4"

do_setup() {
	local missing=() p
	# shellcheck disable=SC2046,SC2086 # lists of words
	for p in $(printf '%s\n' $HOST_PACKAGES $(guest_packages) | sort -u); do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep 'ok installed' >/dev/null ||
			missing+=("$p")
	done
	if [ ${#missing[@]} -eq 0 ]; then
		say "setup: every host package is installed"
		return 0
	fi
	[ "$(id -u)" -eq 0 ] || die "setup must run as root to install: ${missing[*]}"
	say "setup: installing ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt_update
	apt-get install -y -q --no-install-recommends "${missing[@]}" ||
		die "setup: apt-get install failed (see above)"
	guest_setup
}

# apt_update: apt-get update, tried three times. A mirror caught syncing
# serves an index that does not match its Release file, and apt then fails
# the whole update for that one index (seen for bookworm-security's armhf
# Packages): after the third try go on with the lists apt has, with a
# warning; a package that is then missing fails where it is installed or
# downloaded.
apt_update() {
	local try
	for try in 1 2 3; do
		apt-get update -q >&2 && return 0
		[ $try -eq 3 ] || {
			say "apt-get update failed (try $try of 3); again in 30 s"
			sleep 30
		}
	done
	say "warning: apt-get update failed three times; going on with the package lists apt has"
}

# arch_list [ARCH...]: the architectures given, or all of them.
arch_list() {
	if [ $# -gt 0 ]; then
		echo "$@"
	else
		echo "$ARCHES"
	fi
}

# Patch files in series order: series/, kunit/, selftests/; the cover letter
# is not a patch. The list and the digests are tools/lib/common.py's, which
# the commands written in Python read too.
patch_files() {
	python3 -B "$LIB/common.py" files "$REPO"
}

patches_digest() {
	python3 -B "$LIB/common.py" digest "$REPO" "$TARBALL"
}

tarball_version() {
	dpkg-query -W -f='${Version}' linux-source-6.12 2>/dev/null || echo unknown
}

tgit() { git -C "$TREE" "$@"; }
# git without the user's and the system's configuration, for what ends up in
# patch files: format.headers, diff.orderFile, diff.noprefix and the like
# would change their bytes.
tgit_pure() { GIT_CONFIG_GLOBAL=/dev/null GIT_CONFIG_NOSYSTEM=1 git -C "$TREE" "$@"; }

# tree_unexported: true when the tree holds work that series/, kunit/ and
# selftests/ do not: changes, or commits since the last prepare or export.
tree_unexported() {
	[ -f "$TREE/.git/blkctx-applied-head" ] || return 1
	[ -n "$(tgit status --porcelain)" ] ||
		[ "$(tgit rev-parse HEAD)" != "$(cat "$TREE/.git/blkctx-applied-head")" ]
}

# tree_current: the tree exists and was prepared or exported from the patch
# files as they are now; commits made since in the tree are fine.
tree_current() {
	python3 -B "$LIB/common.py" current "$REPO" "$TREE" "$TARBALL" || exit 1
}

# tree_state: the tree's commit and its uncommitted changes, as a digest; a
# kernel built from the tree records it, and a guest boots only a kernel
# whose record matches the tree as it is now.
tree_state() {
	python3 -B "$LIB/common.py" state "$TREE"
}

# tree_exact: tree_current, and the tree holds nothing more than the files.
tree_exact() {
	tree_current
	! tree_unexported ||
		die "$TREE has work that is not in series/, kunit/, selftests/: commit it and run tools/blkctx export first"
}

make_pristine() {
	[ -f "$TARBALL" ] || die "$TARBALL not found: run tools/blkctx setup"
	local tmp=$CACHE/linux.tmp
	rm -rf "$tmp"
	cleanup_add "$tmp"
	mkdir -p "$tmp"
	say "prepare: extracting $TARBALL"
	tar -xJf "$TARBALL" -C "$tmp" --strip-components=1
	# Debian's top-level .gitignore ignores everything ("/*"): drop that
	# rule so that git sees the tree and new files as usual.
	sed -i '/^# Debian packaging: ignore everything/,$d' "$tmp/.gitignore"
	sed -i -e :a -e '/^#\?\n*$/{$d;N;ba' -e '}' "$tmp/.gitignore"
	git -C "$tmp" init -q -b base
	git -C "$tmp" config core.autocrlf false
	git -C "$tmp" config gc.auto 0
	git -C "$tmp" config user.name "$IDENT_NAME"
	git -C "$tmp" config user.email "$IDENT_EMAIL"
	git -C "$tmp" add -A
	GIT_AUTHOR_DATE=$PRISTINE_DATE GIT_COMMITTER_DATE=$PRISTINE_DATE \
		git -C "$tmp" commit -q --no-verify \
		-m "Linux $(make -s -C "$tmp" kernelversion 2>/dev/null) (Debian linux-source-6.12 $(tarball_version))"
	git -C "$tmp" tag pristine
	tarball_version >"$tmp/.git/blkctx-source"
	rm -rf "$TREE"
	mv "$tmp" "$TREE"
}

# Apply every patch on a branch "blkctx" from the pristine commit.
apply_series() {
	local f n=0
	tgit checkout -f -q -B blkctx pristine
	tgit am --abort >/dev/null 2>&1 || true
	while read -r f; do
		n=$((n + 1))
		tgit am -q --keep-cr "$f" ||
			die "patch $(basename "$f") does not apply; the tree is left in git am state in $TREE"
	done < <(patch_files)
	say "prepare: applied $n patches in $TREE"
	patches_digest >"$TREE/.git/blkctx-applied"
	tgit rev-parse HEAD >"$TREE/.git/blkctx-applied-head"
}

do_prepare() {
	local force=0 old new
	case ${1:-} in
	"") ;;
	--force) force=1 ;;
	*) die "prepare: unknown argument $1 (usage: tools/blkctx prepare [--force])" ;;
	esac
	mkdir -p "$CACHE" "$BUILD"
	old=$(cat "$TREE/.git/blkctx-source" 2>/dev/null || true)
	new=$(tarball_version)
	if [ -d "$TREE/.git" ] && [ "$old" != "$new" ]; then
		# the tree is extracted again: never with work that is only there
		if [ $force -eq 0 ] && tree_unexported; then
			die "linux-source-6.12 changed (${old:-?} -> $new), and $TREE has work that is not exported: commit it and run tools/blkctx export, then prepare again to apply the series to the new source (or prepare --force to drop that work)"
		fi
		say "prepare: linux-source-6.12 changed (${old:-?} -> $new); extracting it again"
		rm -rf "$TREE"
	fi
	[ -d "$TREE/.git" ] || make_pristine
	if [ "$(cat "$TREE/.git/blkctx-applied" 2>/dev/null)" = "$(patches_digest)" ] &&
		[ -f "$TREE/.git/blkctx-applied-head" ] && ! tree_unexported; then
		say "prepare: $TREE already holds the series"
		return 0
	fi
	if [ $force -eq 0 ] && tree_unexported; then
		die "$TREE has work that is not exported (commit it and run tools/blkctx export, or use prepare --force to drop it)"
	fi
	apply_series
}

# Where a commit's patch belongs, from its subject.
patch_dir() {
	case $1 in
	selftests:*) echo selftests ;;
	*KUnit*) echo kunit ;;
	*) echo series ;;
	esac
}

do_export() {
	[ -d "$TREE/.git" ] || die "no tree: run tools/blkctx prepare"
	[ -z "$(tgit status --porcelain --untracked-files=no)" ] ||
		die "$TREE has uncommitted changes: commit them first"
	local out=$CACHE/export.tmp order="series kunit selftests" last=0 f d i o
	local -a dirs=()
	while IFS= read -r subj; do
		d=$(patch_dir "$subj")
		i=0
		for o in $order; do
			i=$((i + 1))
			[ "$o" = "$d" ] && break
		done
		[ $i -ge $last ] || die "\"$subj\" ($d) comes after a later group: order the commits series, kunit, selftests"
		last=$i
		dirs+=("$d")
	done < <(tgit log --reverse --format=%s pristine..HEAD)
	rm -rf "$out"
	cleanup_add "$out"
	mkdir -p "$out"
	tgit_pure -c core.abbrev=12 format-patch -q --zero-commit --no-signature -N --find-renames \
		-o "$out" pristine..HEAD
	for d in $order; do
		find "$REPO/$d" -maxdepth 1 -name '[0-9][0-9][0-9][0-9]-*.patch' \
			! -name '0000-cover-letter.patch' -delete
	done
	i=0
	for f in "$out"/*.patch; do
		[ -e "$f" ] || break
		mv "$f" "$REPO/${dirs[$i]}/"
		i=$((i + 1))
	done
	rm -rf "$out"
	write_cover "$REPO/series/0000-cover-letter.patch" "PATCH"
	patches_digest >"$TREE/.git/blkctx-applied"
	tgit rev-parse HEAD >"$TREE/.git/blkctx-applied-head"
	say "export: $(patch_files | wc -l) patches written into series/, kunit/, selftests/"
}

# Fold fixup! commits into their targets and put the commits in series,
# kunit, selftests order, keeping the order within each group.
do_reorder() {
	[ -d "$TREE/.git" ] || die "no tree: run tools/blkctx prepare"
	GIT_SEQUENCE_EDITOR="$REPO/tools/lib/reorder-todo" \
		tgit rebase -q -i --autosquash pristine ||
		die "rebase stopped; resolve it in $TREE (git rebase --continue or --abort)"
	tgit log --oneline pristine..HEAD | cat
}

# The cover letter's subject and body are kept by hand in
# series/0000-cover-letter.patch; the shortlog and diffstat are regenerated.
cover_subject() {
	local subject=
	[ -f "$REPO/series/0000-cover-letter.patch" ] &&
		subject=$(sed -n 's/^Subject: \[[^]]*\] //p' "$REPO/series/0000-cover-letter.patch" | head -1)
	printf '%s\n' "${subject:-blkctx: block I/O contexts for eMMC as write streams}"
}

cover_body() {
	local f=$REPO/series/0000-cover-letter.patch
	[ -f "$f" ] || { echo "(no cover letter yet)"; return; }
	awk 'hdr && /^$/ { hdr = 0; body = 1; next }
	     /^Subject:/ { hdr = 1 }
	     body && /^blkctx developers \([0-9]+\):$/ { exit }
	     body { print }' "$f" | sed -e :a -e '/^\n*$/{$d;N;ba' -e '}'
}

based_on() {
	echo "Based on Linux $(make -s -C "$TREE" kernelversion), as in Debian's linux-source-6.12 $(cat "$TREE/.git/blkctx-source")."
}

# write_cover FILE PREFIX: a cover letter for pristine..HEAD.
write_cover() {
	local file=$1 prefix=$2 n subject body date
	n=$(tgit rev-list --count pristine..HEAD)
	subject=$(cover_subject)
	body=$(cover_body)
	date=$(tgit_pure log -1 --format=%aD HEAD)
	{
		echo "From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001"
		echo "From: $IDENT_NAME <$IDENT_EMAIL>"
		echo "Date: $date"
		if [ "$prefix" = PATCH ]; then
			echo "Subject: [PATCH 0/$n] $subject"
		else
			echo "Subject: [$prefix $(printf "%0${#n}d" 0)/$n] $subject"
		fi
		echo
		printf '%s\n\n' "$body"
		tgit_pure shortlog pristine..HEAD
		tgit_pure diff --stat=72 --summary pristine..HEAD
		echo
		based_on
	} >"$file"
}

# arch_make_cmd ARCH: make for ARCH in $TREE (common.py's arch_make, which
# the Python commands use) in ARCH_MAKE, for with_progress.
arch_make_cmd() {
	ARCH_MAKE=()
	mapfile -d '' ARCH_MAKE < <(python3 -B "$LIB/common.py" make "$1" "$TREE")
	[ ${#ARCH_MAKE[@]} -gt 0 ] || die "unknown architecture $1"
}

# mail_sender IDENT: "Name <address>" of the person who sends, or die.
# The series' own identity is not a person: it cannot sign off.
mail_sender() {
	case $1 in
	"") return 1 ;;
	*"<$IDENT_EMAIL>"*) return 1 ;;
	?*" <"?*@?*">") printf '%s\n' "$1" ;;
	*) return 1 ;;
	esac
}

# do_mail [--reroll=N] [--from=IDENT] DIR: the series as mail from the
# sender, checked by mail_check. A reroll's cover letter carries a
# range-diff to the version before it, when that was mailed from this tree.
do_mail() {
	local dir="" reroll=1 from="" a sender prev tmp branch desc subject tag
	local -a range=() to=() cc=() version=()
	for a in "$@"; do
		case $a in
		--reroll=*) reroll=${a#*=} ;;
		--from=*) from=${a#*=} ;;
		*) dir=$a ;;
		esac
	done
	sender=$(mail_sender "$from") || die "mail: no sender: set git's user.name and user.email, or pass --from=\"Name <address>\""
	# from here on git runs in $TREE: a relative DIR is the caller's
	[ -n "$dir" ] && dir=$(realpath -m -- "$dir")
	mail_dir_ok "$dir" || die "mail: $dir is not a new or empty directory"
	command -v b4 >/dev/null || die "mail: b4 checks the mail and is not installed (tools/blkctx setup installs it)"
	# send what series/, kunit/ and selftests/ hold, no older, no newer
	tree_exact
	branch=$(tgit symbolic-ref --short -q HEAD) || die "mail: $TREE is not on a branch"
	tmp=$(mktemp -d)
	cleanup_add "$tmp"
	# get_maintainer reads the patches: a first, plain copy for it
	tgit_pure format-patch -q --find-renames -o "$tmp/plain" pristine..HEAD
	mail_recipients to --to "$tmp/plain" --m --no-r --no-l
	[ ${#to[@]} -gt 0 ] || die "mail: scripts/get_maintainer.pl names no maintainer to send to"
	mail_recipients cc --cc "$tmp/plain" --no-m --r --l
	if [ "$reroll" -gt 1 ]; then
		version=("--reroll-count=$reroll")
		prev=blkctx-mail/v$((reroll - 1))
		if tgit rev-parse -q --verify "refs/tags/$prev" >/dev/null; then
			range=("--range-diff=$prev-base..$prev")
		else
			say "mail: v$((reroll - 1)) was not mailed from this tree: v$reroll has no range-diff"
		fi
	fi
	subject=$(cover_subject)
	desc="$subject"$'\n\n'"$(cover_body)"$'\n\n'"$(based_on)"
	# written and checked aside: DIR only ever holds mail that passed
	# (the sender's identity as committer: --from and --signoff take it)
	GIT_COMMITTER_NAME=${sender% <*} GIT_COMMITTER_EMAIL=$(mail_address "$sender") \
		tgit_pure -c core.abbrev=12 -c "branch.$branch.description=$desc" \
		format-patch -q --zero-commit --no-signature --numbered --thread=shallow \
		--cover-letter --cover-from-description=subject --from --signoff \
		--find-renames "${version[@]}" "${range[@]}" "${to[@]}" "${cc[@]}" \
		-o "$tmp/mail" pristine..HEAD
	mail_check "$tmp/mail" "$sender"
	mkdir -p "$dir"
	mv "$tmp"/mail/*.patch "$dir/" || die "mail: cannot move the mail into $dir"
	# the versions a reroll compares with (lightweight, whatever the
	# user's tag config); mail-check's own are not sent
	if [ -z "${mail_untagged:-}" ]; then
		tag=refs/tags/blkctx-mail/v$reroll
		if tgit rev-parse -q --verify "$tag" >/dev/null &&
			[ "$(tgit rev-parse "$tag")" != "$(tgit rev-parse HEAD)" ]; then
			say "mail: v$reroll was mailed before from other commits; $tag now names these"
		fi
		tgit_pure update-ref "$tag" HEAD
		tgit_pure update-ref "$tag-base" pristine
	fi
	say "mail: v$reroll, $(find "$dir" -name '*.patch' | wc -l) messages from $sender in $dir (send with git send-email $dir/*.patch)"
}

# mail_recipients ARRAY OPTION DIR ROLES...: ARRAY gets "OPTION=address"
# for each address get_maintainer.pl gives for the patches in DIR with
# ROLES, but the series' own, which its MAINTAINERS entries name.
mail_recipients() {
	local -n list=$1
	local opt=$2 dir=$3 out a
	shift 3
	out=$(cd "$TREE" && perl scripts/get_maintainer.pl --no-rolestats --no-git \
		--no-git-fallback "$@" "$dir"/*.patch) ||
		die "mail: scripts/get_maintainer.pl failed"
	list=()
	while IFS= read -r a; do
		[ -z "$a" ] || [[ $a == *"<$IDENT_EMAIL>"* ]] || list+=("$opt=$a")
	done <<<"$out"
}

mail_address() {
	local a=${1##*<}
	printf '%s\n' "${a%>}"
}

# mail_dir_ok DIR: DIR is new or an empty directory (mail never overwrites).
mail_dir_ok() {
	[ -n "$1" ] || return 1
	[ -e "$1" ] || return 0
	[ -d "$1" ] && [ -z "$(ls -A "$1")" ]
}

# mail_check DIR SENDER: what a maintainer gets from DIR with b4 am is the
# tree's series: every patch, in order, each giving its commit's tree,
# author and message, with the sender's sign-off after the stored ones.
mail_check() {
	local dir=$1 sender=$2 tmp n i=0 c want got msgid f
	n=$(tgit rev-list --count pristine..HEAD)
	tmp=$(mktemp -d)
	cleanup_add "$tmp"
	cat "$dir"/*.patch >"$tmp/all.mbox"
	# one thread: every patch answers the cover letter
	msgid=$(sed -n 's/^Message-I[dD]: \(<.*>\)$/\1/p' "$dir"/*0000-cover-letter.patch)
	[ -n "$msgid" ] || die "mail: the cover letter has no Message-Id"
	for f in "$dir"/*.patch; do
		case $f in *0000-cover-letter.patch) continue ;; esac
		grep -qxF "In-Reply-To: $msgid" "$f" ||
			die "mail: $(basename "$f") does not answer the cover letter"
	done
	mkdir "$tmp/b4" "$tmp/split"
	# The thread on stdin, as b4 takes one fetched from an archive (b4 0.12
	# cannot read folded subjects from a local mbox file); -T keeps the
	# trailers as they are, -C keeps b4's cache out of HOME.
	if ! HOME=$tmp b4 am -T -C -m - -o "$tmp/b4" -n series <"$tmp/all.mbox" \
		>"$tmp/b4.log" 2>&1; then
		cat "$tmp/b4.log" >&2
		die "mail: b4 am cannot take the series"
	fi
	if ! grep -qx "Total patches: $n" "$tmp/b4.log" || grep -q WARNING "$tmp/b4.log"; then
		cat "$tmp/b4.log" >&2
		die "mail: b4 am does not see $n patches in one thread"
	fi
	# git as everyone has it: no mailinfo.scissors, trailer.* or apply.whitespace
	local -x GIT_CONFIG_GLOBAL=/dev/null GIT_CONFIG_NOSYSTEM=1
	[ "$(git mailsplit -o"$tmp/split" "$tmp/b4/series.mbx")" = "$n" ] ||
		die "mail: b4 am gave another number of patches than $n"
	GIT_INDEX_FILE=$tmp/index tgit read-tree pristine
	for c in $(tgit rev-list --reverse pristine..HEAD); do
		i=$((i + 1))
		git mailinfo "$tmp/msg" "$tmp/patch" <"$tmp/split/$(printf '%04d' $i)" >"$tmp/info"
		GIT_INDEX_FILE=$tmp/index tgit apply --cached "$tmp/patch" ||
			die "mail: patch $i does not apply"
		[ "$(GIT_INDEX_FILE=$tmp/index tgit write-tree)" = "$(tgit rev-parse "$c^{tree}")" ] ||
			die "mail: patch $i does not give the tree of $(tgit log -1 --format='%h ("%s")' "$c")"
		want=$(tgit log -1 --format='Author: %an%nEmail: %ae%nSubject: %s' "$c")
		got=$(grep -E '^(Author|Email|Subject): ' "$tmp/info")
		[ "$got" = "$want" ] || die "mail: patch $i is not from its author or has another subject: $got"
		want=$(tgit log -1 --format=%b "$c" | git interpret-trailers \
			--if-exists addIfDifferentNeighbor --trailer "Signed-off-by: $sender")
		got=$(cat "$tmp/msg")
		[ "$got" = "$want" ] ||
			die "mail: patch $i's message is not its commit's with the sender's sign-off last"
	done
}

# The mail a sender would get, made and checked in a temporary directory.
do_mail_check() {
	local tmp mail_untagged=1
	tmp=$(mktemp -d)
	cleanup_add "$tmp"
	do_mail --from="blkctx mail check <mail-check@example.org>" "$tmp/mail"
}
