// Reading a WorkloadSpec from a JSON object (budget files, measurement files): every setting
// under the key the JSON output's "workload" object gives it, each value checked at its key.
#pragma once

#include <functional>
#include <optional>
#include <string_view>
#include <vector>

#include "capcalc/workload_spec.hpp"

#include "json_view.hpp"

namespace capcalc {

/// The member `key` of the object being read, else nullopt.
using KeyReader = std::function<std::optional<JsonView>(std::string_view key)>;

/// The keys read_workload_spec() reads, for a file's list of known keys. `devices_key` is the
/// key of the devices in all ("devices"; a budget's "devices" lists device ids, so there it is
/// "device_count").
std::vector<std::string_view> workload_keys(std::string_view devices_key);

/// Reads the workload keys of `object`, each missing one from `defaults` where given; checks
/// each value's type, range and name at its key and records where it was in `where` (for
/// workload_from). Refuses `devices_key` with "data_parallel".
WorkloadSpec read_workload_spec(const JsonView& object, const std::optional<JsonView>& defaults,
                                std::string_view devices_key, SpecLocations& where);

/// An `mtp_layers` value (ModelOptions::mtp_layers): a whole number from 1 to kMaxMtpLayers,
/// in a training workload (`mode`), else an error at its key.
std::int64_t read_mtp_layers(const JsonView& value, Mode mode);

}  // namespace capcalc
