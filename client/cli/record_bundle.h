// The record bundle on disk: the one writer of summary.json, samples.csv and
// trace.json, used by edgemon record and edgemon attach (their contents are
// SummaryJson, SamplesCsv and TraceJson in record_report.h).
#pragma once

#include <string>

#include "client/cli/record_report.h"
#include "client/edgemon_client.h"

namespace edgemon::cli::record {

// Creates the bundle's directory (and its parents); false, with a message on
// stderr, when it cannot.
bool MakeBundleDir(const std::string& dir);

// Reads the stored frames of the report's measured range from the daemon and
// writes summary.json, samples.csv and trace.json into `dir`; a failed read
// is noted in summary.json and trace.json, and the frames read before it are
// kept. False, with a message on stderr, when a file cannot be written.
bool WriteBundle(client::Client& c, const std::string& dir, const Report& report,
                 const Inventory& inventory);

}  // namespace edgemon::cli::record
