#!/usr/bin/env bash
# Host checks of the shipped CUDA headers (python/cunumpy/include/cunumpy/{index,array_view,atomic}.cuh)
# compiled as plain C++17 with the stand-ins of shim.h. No GPU or NVRTC needed.
# Run from anywhere: bash tests/cxx/headers/check_headers.sh   (CXX overrides g++)
# Exits non-zero on the first failing step.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
inc="$root/python/cunumpy/include"
prelude="$root/crates/cunumpy-emu/prelude/cunumpy_emu.h"
cxx="${CXX:-g++}"
warn=(-std=c++17 -Wall -Wextra -Wpedantic -Wshadow -Werror)
build="$(mktemp -d)"
trap 'rm -rf "$build"' EXIT

step() { printf '== %s\n' "$*"; }
fail() { printf 'FAIL: %s\n' "$*" >&2; exit 1; }

headers=(index.cuh array_view.cuh atomic.cuh)

step "headers include no standard header (only <stdio.h> for nvcc/hipcc host passes)"
for h in "${headers[@]}"; do
  f="$inc/cunumpy/$h"
  [[ -f $f ]] || fail "$f is missing"
  bad="$(grep -nE '^[[:space:]]*#[[:space:]]*include' "$f" | grep -v '<stdio.h>' || true)"
  [[ -z $bad ]] || fail "$h includes: $bad"
  grep -q "#ifndef CUNUMPY_" "$f" || fail "$h has no include guard"
done

step "each header alone, freestanding (-nostdinc, as under NVRTC), with and without bounds checks"
for h in "${headers[@]}"; do
  for extra in "" "-DCUNUMPY_BOUNDS_CHECK" "-DCUNUMPY_TEST_NO_QUALIFIERS"; do
    printf '#include <cunumpy/%s>\n' "$h" > "$build/alone.cpp"
    # shellcheck disable=SC2086
    "$cxx" "${warn[@]}" -fsyntax-only -nostdinc -nostdinc++ -DCUNUMPY_TEST_FREESTANDING $extra \
      -I "$inc" -include "$here/shim.h" "$build/alone.cpp" || fail "$h alone ($extra)"
  done
done

step "kernels using all three headers, freestanding, sm_50 (CAS path) and sm_90, checked and not"
for arch in "" "-D__CUDA_ARCH__=500" "-D__CUDA_ARCH__=900" "-DCUNUMPY_TEST_NO_QUALIFIERS"; do
  for check in "" "-DCUNUMPY_BOUNDS_CHECK"; do
    # shellcheck disable=SC2086
    "$cxx" "${warn[@]}" -fsyntax-only -nostdinc -nostdinc++ -DCUNUMPY_TEST_FREESTANDING $arch $check \
      -I "$inc" -include "$here/shim.h" "$here/freestanding.cpp" || fail "freestanding.cpp ($arch $check)"
  done
done

san=()
if echo 'int main(){}' | "$cxx" -x c++ -fsanitize=address,undefined - -o "$build/san" 2>/dev/null; then
  san=(-fsanitize=address,undefined -fno-sanitize-recover=all)
fi

step "layout, indexing, conversion, index macros and atomics (host run${san:+, sanitizers on})"
for arch in "" "-D__CUDA_ARCH__=500"; do
  # shellcheck disable=SC2086
  "$cxx" "${warn[@]}" -O1 "${san[@]}" $arch -I "$inc" -I "$here" "$here/test_headers.cpp" \
    -o "$build/test_headers" || fail "test_headers.cpp does not compile ($arch)"
  "$build/test_headers" || fail "test_headers ($arch)"
done

step "bounds checks (-DCUNUMPY_BOUNDS_CHECK): message on stdout, then __trap()"
"$cxx" "${warn[@]}" -O1 -DCUNUMPY_BOUNDS_CHECK -I "$inc" -I "$here" "$here/bounds_check.cpp" \
  -o "$build/bounds_check" || fail "bounds_check.cpp does not compile"
out="$("$build/bounds_check" in_range)" || fail "in-range indices trapped: $out"
[[ $out == "in range ok" ]] || fail "in_range printed: $out"
expect_trap() {  # case, expected stdout
  local rc=0 got
  got="$("$build/bounds_check" "$1")" || rc=$?
  [[ $rc == 42 ]] || fail "case $1: exit status $rc, expected the trap (42); stdout: $got"
  [[ $got == "$2" ]] || fail "case $1: printed '$got', expected '$2'"
  printf '   %-10s %s\n' "$1" "$got"
}
expect_trap axis1 "cunumpy: index 3 is out of bounds for axis 1 with size 3"
expect_trap negative "cunumpy: index -1 is out of bounds for axis 0 with size 2"
expect_trap carray5 "cunumpy: index 6 is out of bounds for axis 4 with size 6"
expect_trap converted "cunumpy: index 3 is out of bounds for axis 1 with size 3"
expect_trap axis15 "cunumpy: index 4 is out of bounds for axis 15 with size 4"
expect_trap huge "cunumpy: index 1099511627776 is out of bounds for axis 1 with size 3"

step "without -DCUNUMPY_BOUNDS_CHECK the checks are compiled out"
"$cxx" "${warn[@]}" -O1 -I "$inc" -I "$here" "$here/bounds_check.cpp" -o "$build/unchecked" \
  || fail "bounds_check.cpp does not compile unchecked"
out="$("$build/unchecked" axis1)" || fail "unchecked build trapped"
[[ $out == "no trap" ]] || fail "unchecked build printed: $out"

if [[ -f $prelude ]]; then
  step "together with the CPU-emulator prelude (checked pointers, its atomics, printf, __trap)"
  for check in "" "-DCUNUMPY_BOUNDS_CHECK"; do
    # shellcheck disable=SC2086
    "$cxx" -std=c++17 -Wall -Wextra -Werror -fsyntax-only $check -I "$inc" -include "$prelude" \
      "$here/with_emu_prelude.cpp" || fail "with_emu_prelude.cpp ($check)"
  done
else
  step "skipped: no emulator prelude at $prelude"
fi

echo "all header checks passed"
