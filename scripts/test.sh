#!/usr/bin/env bash
# The one test command (README, .ci/run): installs what the tests need, then checks
# formatting and lints, runs every test of the workspace, then with the binary those tests
# built (target/debug/turnpike): the bench kit's quick plan end to end, the packages, the
# Helm chart, the REST contract and the portals in a browser. Fails on the first failure.
set -euo pipefail
cd "$(dirname "$0")/.."

# Each phase says when it starts (seconds since this script began): CI has a 30-minute
# budget, and a log that shows where the time went is how it is kept.
started=$SECONDS
phase() { echo "== $1 (at $((SECONDS - started)) s)"; }

# What building and running need, then the test and benchmark tools (issue 28: the
# quickstart installs only the former).
scripts/install-test-deps.sh

# Disk: a cold CI machine may have little free space (the ci-bench build once failed with
# "No space left on device" after the tests). Incremental caches are no use to a one-off
# run and take gigabytes; free space is printed before each build so a failure says why.
export CARGO_INCREMENTAL=0
free_mib() { df -Pm "${1:-.}" | awk 'NR==2 {print $4}'; }
echo "free disk: $(free_mib) MiB"

phase "fmt"; cargo fmt --all -- --check
phase "clippy"; cargo clippy --workspace --all-targets --locked -- -D warnings
phase "tests"; cargo test --workspace --locked 2>&1 | tee target/test-output.txt
# A workspace whose tests silently vanished must not pass.
passed=$(grep -Eo '^test result: ok\. [0-9]+ passed' target/test-output.txt | awk '{s+=$4} END {print s+0}')
failed=$(grep -Eo '[0-9]+ failed' target/test-output.txt | awk '{s+=$1} END {print s+0}')
if [ "$passed" -eq 0 ]; then echo "no tests ran" >&2; exit 1; fi

# The web portals: type check, unit tests, production build (what the control plane
# serves), then the browser tests below against the tests' binary.
phase "ui"
(cd ui && npm run --silent typecheck && npm test --silent && npm run --silent build)

# The bench kit end to end (issue 6): the quick plan against the tests' (debug) gateway,
# about a minute, leaving its report behind. It checks the kit works, not how fast:
# performance is measured by bench/ on optimised builds. No optimised build here: it took
# 6-10 of CI's 30 minutes and every step below runs as well on the debug binary (which
# also keeps overflow checks on).
phase "bench quick plan"
bin=target/debug/turnpike
[ -x "$bin" ] || cargo build --locked -p turnpike
rm -rf target/bench-quick
timeout 180 "$bin" bench matrix --plan quick --out target/bench-quick
for f in index.html summary.md summary.csv results.json; do
  [ -s "target/bench-quick/$f" ] || { echo "bench quick plan left no $f" >&2; exit 1; }
done

# --- packaging (issue 28): the .deb and the tarball of the binary the tests built (a
# fat-LTO release build does not fit CI's budget), their units, and the Helm chart.
phase "package"
scripts/package.sh --profile dev --no-build
packaging/check.sh target/package
phase "helm chart"
deploy/helm/check.sh
# --- end packaging

# The REST contract (issue 29): the served OpenAPI document linted (spectral, redocly),
# generated TypeScript and Python clients build, the UI's generated types are fresh.
phase "openapi"
scripts/openapi-check.sh "$bin"

# The portals in Chromium against a real `turnpike up` (screenshots in target/screenshots).
phase "ui browser tests"
(cd ui && TURNPIKE_BIN="$PWD/../$bin" npx playwright test)

echo "$passed passed, $failed failed, $((SECONDS - started)) s"
