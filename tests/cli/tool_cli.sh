#!/bin/sh
# One tool's (or subcommand's) command line: an unknown option exits 2 with "<tool>: unknown
# option" on stderr and nothing on stdout; --help exits 0 and lists every option named here;
# --version exits 0 and prints the library version. With a documentation page, --help also
# lists every option of the page's option tables (rows "| `-x, --name ...` | ...") and the
# page has a row for every option --help lists but --help and --version.
# usage: tool_cli.sh VERSION NAME BINARY [SUBCOMMAND] [PAGE.md] -- OPTION...
set -u
version=$1
name=$2
bin=$3
shift 3
sub=
page=
case "$1" in --) ;; *.md) ;; *)
  sub=$1
  shift
  ;;
esac
case "$1" in *.md)
  page=$1
  shift
  ;;
esac
shift
documented=
[ -n "$page" ] && documented=$(grep -oE '^\| `(-[a-zA-Z], )?--[a-z0-9-]+' "$page" | sed 's/.*--/--/')
[ -n "$page" ] && [ -z "$documented" ] && echo "FAIL: $page has no option table" && exit 1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
bad() {
  echo "FAIL: $name: $*"
  fails=$((fails + 1))
}

# shellcheck disable=SC2086
"$bin" $sub --no-such-option >"$tmp/out" 2>"$tmp/err"
rc=$?
[ "$rc" -eq 2 ] || bad "--no-such-option exited $rc, not 2"
head -n 1 "$tmp/err" | grep -qF "$name: unknown option '--no-such-option'" ||
  bad "--no-such-option: stderr '$(cat "$tmp/err")'"
[ -s "$tmp/out" ] && bad "--no-such-option wrote to stdout"

# shellcheck disable=SC2086
"$bin" $sub --help >"$tmp/out" 2>"$tmp/err"
rc=$?
[ "$rc" -eq 0 ] || bad "--help exited $rc"
# shellcheck disable=SC2086
for opt in "$@" $documented --help --version; do
  grep -qE -- "^  (-[^ ], |    )$opt(=<| |\$)" "$tmp/out" || bad "--help does not list $opt"
done
# ... and, with a page, the page has a row for every option --help lists (but the parser's
# own --help and --version).
if [ -n "$page" ]; then
  for opt in $(grep -oE -- "^  (-[^ ], |    )--[a-z0-9-]+" "$tmp/out" | sed 's/.*--/--/' |
    grep -vxE -- '--(help|version)'); do
    printf '%s\n' "$documented" | grep -qx -- "$opt" || bad "$page has no row for $opt"
  done
fi

# shellcheck disable=SC2086
"$bin" $sub --version >"$tmp/out" 2>"$tmp/err"
rc=$?
[ "$rc" -eq 0 ] || bad "--version exited $rc"
prog=${name%% *}
grep -qx "$prog (TempoKV) $version" "$tmp/out" || bad "--version printed '$(cat "$tmp/out")'"

[ "$fails" -eq 0 ] && echo "$name: ok"
exit "$fails"
