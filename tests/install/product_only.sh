#!/usr/bin/env bash
# libtempo.so holds the product only: no function or data that the study library
# (tempo_study: execution model, workloads, serving metrics, placement study, dax-l1) defines
# is linked into it, and its dynamic symbol table is the C ABI (tempo_*) and nothing else.
# Usage: product_only.sh LIBTEMPO_SO LIBTEMPO_STUDY_A
set -euo pipefail
lib=$1
study=$2
fail() { echo "product-only check: $*" >&2; exit 1; }

# Strong definitions only: inline and template code (weak) may come from shared headers.
study_syms=$(nm --defined-only "$study" | awk 'NF == 3 && $2 ~ /^[TDBR]$/ {print $3}' | sort -u)
[ "$(wc -l <<<"$study_syms")" -gt 100 ] || fail "$study defines too few symbols to compare"
lib_syms=$(nm "$lib" | awk '{print $NF}' | sort -u)
grep -qx 'tempo_ctx_new' <<<"$lib_syms" || fail "$lib has no symbol table to compare"
both=$(comm -12 <(echo "$study_syms") <(echo "$lib_syms"))
[ -z "$both" ] || fail "study code linked into $lib: $(c++filt <<<"$both" | head -20)"

exported=$(nm -D --defined-only "$lib" | awk '$2 != "A" && $3 !~ /^tempo_/ {print $3}')
[ -z "$exported" ] || fail "exported beyond the C ABI: $exported"
echo "product-only check: $(nm -D --defined-only "$lib" | grep -c ' T tempo_') C ABI functions," \
  "$(wc -l <<<"$study_syms") study symbols, none in $(basename "$lib")"
