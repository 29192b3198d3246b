#!/bin/sh
# Installs the OpenTelemetry JS SDK's metrics exporter (pinned versions) from
# the npm registry into DIR/node_modules, for the OTLP differential test
# (tests/e2e/otlp_js_test.py). Needs Debian's nodejs and npm packages; the
# 2.x SDK line is the one that runs on Debian 12's Node.js 18/20.
#   scripts/install-otel-js.sh DIR
set -eu
dir=${1:?usage: install-otel-js.sh DIR}
mkdir -p "$dir"
cd "$dir"
if [ -f node_modules/.edgemon-otel-js-2.12.0 ]; then
  exit 0  # installed by an earlier run
fi
[ -f package.json ] || echo '{"private": true}' > package.json
npm install --no-audit --no-fund --loglevel=error --save-exact \
  @opentelemetry/api@1.9.0 \
  @opentelemetry/resources@2.12.0 \
  @opentelemetry/sdk-metrics@2.12.0 \
  @opentelemetry/exporter-metrics-otlp-proto@0.223.0
touch node_modules/.edgemon-otel-js-2.12.0
