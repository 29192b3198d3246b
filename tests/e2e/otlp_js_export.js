'use strict';
// Exports the metrics a JSON spec describes once, through the OpenTelemetry
// JS SDK (MeterProvider, observable instruments) and its OTLP/HTTP protobuf
// exporter, to spec.url. Run by tests/e2e/otlp_js_test.py:
//   NODE_PATH=<dir>/node_modules node otlp_js_export.js SPEC.json
// spec: {url, resource: {key: value}, scope: {name, version, schema_url},
//        metrics: [{name, unit, description, sum, int,
//                   points: [{attributes: {key: value}, value}]}]}
const fs = require('fs');
const { ValueType } = require('@opentelemetry/api');
const { MeterProvider, PeriodicExportingMetricReader } = require('@opentelemetry/sdk-metrics');
const { OTLPMetricExporter } = require('@opentelemetry/exporter-metrics-otlp-proto');
const { resourceFromAttributes } = require('@opentelemetry/resources');

async function main() {
  const spec = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
  const exporter = new OTLPMetricExporter({ url: spec.url });
  // One export, at shutdown.
  const reader = new PeriodicExportingMetricReader({ exporter, exportIntervalMillis: 3600000 });
  const provider = new MeterProvider({
    resource: resourceFromAttributes(spec.resource),
    readers: [reader],
  });
  const meter = provider.getMeter(spec.scope.name, spec.scope.version, {
    schemaUrl: spec.scope.schema_url,
  });
  for (const m of spec.metrics) {
    const options = {
      unit: m.unit,
      description: m.description,
      valueType: m.int ? ValueType.INT : ValueType.DOUBLE,
    };
    // A cumulative monotonic sum is an observable counter; a gauge an observable gauge.
    const instrument = m.sum
      ? meter.createObservableCounter(m.name, options)
      : meter.createObservableGauge(m.name, options);
    instrument.addCallback((result) => {
      for (const p of m.points) result.observe(p.value, p.attributes);
    });
  }
  await provider.shutdown();  // collects and exports once, then ends
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
