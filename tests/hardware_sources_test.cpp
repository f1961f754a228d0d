// Tests that every peak of data/hardware.json stands on a primary document: `sources` holds only
// vendor documents (at least one on the device's vendor's own domain), secondary copies sit in
// `corroboration`, and a peak no vendor document states is flagged in `estimated_peaks` with
// its reason. Also the reader's handling of those two keys.
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "capcalc/error.hpp"
#include "capcalc/hardware.hpp"
#include "capcalc/report.hpp"

#include "catch.hpp"
#include "test_data.hpp"

using capcalc::Device;
using capcalc::HardwareTable;
using capcalc::Precision;

namespace {

const HardwareTable& table() {
  static const HardwareTable loaded =
      capcalc::load_hardware(capcalc::test::data_path("hardware.json"));
  return loaded;
}

// "https://images.nvidia.com/x" -> "images.nvidia.com"; the trailing dot of an absolute name
// ("fudzilla.com.") dropped.
std::string host_of(const std::string& url) {
  const std::size_t start = url.find("://");
  if (start == std::string::npos) return "";
  std::string host = url.substr(start + 3, url.find('/', start + 3) - (start + 3));
  if (!host.empty() && host.back() == '.') host.pop_back();
  return host;
}

bool on_domain(const std::string& host, std::string_view domain) {
  if (host == domain) return true;
  return host.size() > domain.size() &&
         host.compare(host.size() - domain.size(), std::string::npos, domain) == 0 &&
         host[host.size() - domain.size() - 1] == '.';
}

// Domains a vendor owns, with the vendor as data/hardware.json names it.
struct VendorDomain {
  std::string_view domain;
  std::string_view vendor;
};
constexpr VendorDomain kVendorDomains[] = {
    {"nvidia.com", "nvidia"},       {"amd.com", "amd"},           {"intel.com", "intel"},
    {"habana.ai", "intel"},  // Habana Labs is Intel's.
    {"cloud.google.com", "google"}, {"apple.com", "apple"},       {"awsstatic.com", "amazon"},
    {"aws.amazon.com", "amazon"},   {"qualcomm.com", "qualcomm"},
};

// Devices another vendor sells under its own datasheet: AWS's A10G (EC2 G5).
std::string_view also_vendor(const std::string& id) {
  return id == "a10g" ? "amazon" : "";
}

// Hosts of secondary material: spec aggregators, shops, blogs, price trackers, mirrors and
// third-party copies of vendor documents. None may appear in `sources`.
const std::set<std::string_view> kSecondaryDomains = {"ai-hpc.github.io",
                                                      "archdevil.net",
                                                      "archive-lib.hpctech.co.jp",
                                                      "askit.ro",
                                                      "awesomeagents.ai",
                                                      "baseten.co",
                                                      "beebom.com",
                                                      "cheap5v.com",
                                                      "cliffcenter.com",
                                                      "cloudns.ch",
                                                      "codesota.com",
                                                      "deploybase.ai",
                                                      "docs.vultr.com",
                                                      "docslib.org",
                                                      "ecer.com",
                                                      "elchapuzasinformatico.com",
                                                      "elprocus.com",
                                                      "emergentmind.com",
                                                      "factualminds.com",
                                                      "fexania.com",
                                                      "fibermall.com",
                                                      "fpsbench.com",
                                                      "fudzilla.com",
                                                      "geektopia.es",
                                                      "gigagpu.com",
                                                      "glennklockwood.com",
                                                      "gpu.blog",
                                                      "grokipedia.com",
                                                      "hardwaretimes.com",
                                                      "hmc-tech.com",
                                                      "holynerdvana.blogspot.com",
                                                      "hothardware.com",
                                                      "hubbry.com",
                                                      "huggingface.co",
                                                      "inference.duchess.capital",
                                                      "itcreations.com",
                                                      "jax-ml.github.io",
                                                      "leslivresblancs.fr",
                                                      "llmpedia.scads.ai",
                                                      "llmperf.net",
                                                      "lzwjava.github.io",
                                                      "manualshelf.com",
                                                      "manuals.plus",
                                                      "mullet.se",
                                                      "numberworld.org",
                                                      "partofstyle.com",
                                                      "pcguia.pt",
                                                      "pny.com",
                                                      "pocketmags.com",
                                                      "pricegpu.pages.dev",
                                                      "qeeebo.com",
                                                      "radargit.com",
                                                      "reach.dog",
                                                      "saulelectric.com",
                                                      "serv00.net",
                                                      "server-parts.eu",
                                                      "servethehome.com",
                                                      "sgpjbg.com",
                                                      "siakadpt.com",
                                                      "sisoftware.co.uk",
                                                      "spheron.network",
                                                      "stackoverflow.com",
                                                      "storagereview.com",
                                                      "store.sourcecode.com",
                                                      "svethardware.cz",
                                                      "sysrqmts.com",
                                                      "techbytes.app",
                                                      "techrival.com",
                                                      "tekspecz.com",
                                                      "theventurecation.com",
                                                      "thundercompute.com",
                                                      "unanswered.io",
                                                      "upb-pc2.atlassian.net",
                                                      "usage.ai",
                                                      "waredb.com",
                                                      "whatpsu.com",
                                                      "wiaix.com",
                                                      "wikimili.com",
                                                      "wlog.flatlib.jp",
                                                      "yobitel.com",
                                                      "zexron.com",
                                                      "zdszero.github.io",
                                                      "gist.github.com",
                                                      "raw.githubusercontent.com"};

// github.com is secondary except for a vendor's (or a cloud's) own organisation.
const std::set<std::string_view> kVendorGithubOrgs = {
    "NVIDIA", "ROCm", "intel", "GoogleCloudPlatform", "aws", "MicrosoftDocs", "ibm-cloud-docs"};

bool is_secondary(const std::string& url) {
  const std::string host = host_of(url);
  for (std::string_view domain : kSecondaryDomains) {
    if (on_domain(host, domain)) return true;
  }
  if (host == "github.com") {
    const std::size_t org = url.find("github.com/") + 11;
    return kVendorGithubOrgs.count(url.substr(org, url.find('/', org) - org)) == 0;
  }
  return false;
}

bool from_vendor(const Device& d, const std::string& url) {
  const std::string host = host_of(url);
  for (const VendorDomain& owner : kVendorDomains) {
    if (on_domain(host, owner.domain) &&
        (owner.vendor == d.vendor || owner.vendor == also_vendor(d.id))) {
      return true;
    }
  }
  return false;
}

}  // namespace

TEST_CASE("the domain helpers tell vendor documents from secondary copies", "[hardware]") {
  CHECK(host_of("https://images.nvidia.com/a.pdf") == "images.nvidia.com");
  CHECK(host_of("https://fudzilla.com./news") == "fudzilla.com");
  CHECK(on_domain("docs.cloud.google.com", "cloud.google.com"));
  CHECK_FALSE(on_domain("notnvidia.com", "nvidia.com"));
  CHECK(is_secondary("https://github.com/skypilot-org/skypilot-catalog/blob/x/vms.csv"));
  CHECK_FALSE(is_secondary("https://github.com/intel/gaudi-reference-cloud/blob/x/a.html"));
  CHECK(is_secondary("https://nakenako.serv00.net/https-www.apple.com/pl/mac-pro"));
  Device apple;
  apple.id = "m2-ultra";
  apple.vendor = "apple";
  CHECK(from_vendor(apple, "https://www.apple.com/pl/mac-pro/"));
  CHECK_FALSE(from_vendor(apple, "https://www.nvidia.com/x"));
}

TEST_CASE("every device's peaks cite a document on its vendor's own domain", "[hardware]") {
  for (const Device& d : table().devices) {
    CAPTURE(d.id);
    bool vendor_document = false;
    for (const std::string& url : d.sources)
      vendor_document |= from_vendor(d, url);
    CHECK(vendor_document);
  }
}

TEST_CASE("no source is a secondary copy: those are corroboration", "[hardware]") {
  for (const Device& d : table().devices) {
    CAPTURE(d.id);
    for (const std::string& url : d.sources) {
      CAPTURE(url);
      CHECK_FALSE(is_secondary(url));
    }
    std::set<std::string> seen(d.sources.begin(), d.sources.end());
    for (const std::string& url : d.corroboration) {
      CAPTURE(url);
      CHECK((url.rfind("http://", 0) == 0 || url.rfind("https://", 0) == 0));
      CHECK(seen.insert(url).second);  // Listed once, in one of the two lists.
    }
  }
}

TEST_CASE("prices keep a dated source each", "[hardware]") {
  for (const Device& d : table().devices) {
    if (!d.price) continue;
    CAPTURE(d.id);
    const std::string& date = d.price->date;  // "YYYY-MM" or "YYYY-MM-DD"
    REQUIRE((date.size() == 7 || date.size() == 10));
    CHECK(date.substr(0, 2) == "20");
    CHECK(date[4] == '-');
    CHECK((d.price->source.rfind("https://", 0) == 0 || d.price->source.rfind("http://", 0) == 0));
  }
}

TEST_CASE("a peak without a vendor figure is flagged with its reason", "[hardware]") {
  // Apple publishes no M3 Max TFLOPS: both peaks are estimates (Apple's M2 Ultra figure per
  // GPU core x 40 cores, 27.2 / 76 x 40 = 14.32).
  const Device& m3 = table().get("m3-max");
  CHECK(m3.peak(Precision::kFp32).vector_flops_per_s == Approx(27.2e12 / 76 * 40).epsilon(1e-3));
  CHECK_FALSE(m3.estimate_of(Precision::kFp32).vector.empty());
  CHECK_FALSE(m3.estimate_of(Precision::kFp16).vector.empty());
  // The L4's matrix peaks are its NVIDIA datasheet's; only its FP64 rate is flagged.
  const Device& l4 = table().get("l4");
  CHECK(l4.estimate_of(Precision::kFp16).empty());
  CHECK_FALSE(l4.estimate_of(Precision::kFp64).vector.empty());
  // A device sourced throughout carries no flag.
  for (Precision p : table().get("mi300x").precisions()) {
    CHECK(table().get("mi300x").estimate_of(p).empty());
  }
}

TEST_CASE("Apple GPUs run fp16: at the fp32 rate, flagged as an estimate", "[hardware]") {
  for (const Device& d : table().devices) {
    if (d.vendor != "apple") continue;
    CAPTURE(d.id);
    REQUIRE(d.supports(Precision::kFp16));
    // Apple publishes no FP16 rate; the table takes FP16 arithmetic at the FP32 rate.
    CHECK(d.peak(Precision::kFp16).vector_flops_per_s ==
          d.peak(Precision::kFp32).vector_flops_per_s);
    CHECK_FALSE(d.estimate_of(Precision::kFp16).vector.empty());
  }
  // Apple's Mac Pro page: "up to 27.2 teraflops" for the 76-core M2 Ultra GPU.
  CHECK(table().get("m2-ultra").peak(Precision::kFp16).vector_flops_per_s == Approx(27.2e12));
  CHECK(table().get("m2-ultra").estimate_of(Precision::kFp32).empty());
}

TEST_CASE("hw show prints the flag and the corroboration apart from the sources", "[hardware]") {
  const Device& m3 = table().get("m3-max");
  const std::string text = capcalc::render_device_text(m3, table().performance_for(m3));
  CHECK_THAT(text, ContainsSubstring("ESTIMATE     the fp32 vector peak is an unsourced"));
  CHECK_THAT(text, ContainsSubstring("corroboration (secondary copies"));
  const std::size_t sources = text.find("  sources\n");
  const std::size_t copies = text.find("  corroboration");
  REQUIRE(sources != std::string::npos);
  CHECK(copies > sources);
  CHECK(text.find("huggingface.co", sources) > copies);  // A copy, listed under corroboration.
}

namespace {

nlohmann::json one_device() {
  return nlohmann::json::parse(R"({
    "schema_version": 1,
    "devices": [{
      "id": "dev-a", "name": "Device A", "type": "gpu", "vendor": "acme",
      "dense_peak_tflops": {"fp32": {"vector": 10}, "fp16": {"vector": 20, "matrix": 100}},
      "memory_gb": 16, "memory_bandwidth_gb_per_s": 500,
      "sources": ["https://example.com/device-a"],
      "corroboration": ["https://example.org/copy"],
      "estimated_peaks": {"fp16": {"vector": "2 x fp32, not published"}}
    }]})");
}

std::string error_of(const nlohmann::json& json) {
  try {
    capcalc::parse_hardware(json.dump(2), "hw.json");
  } catch (const capcalc::Error& e) {
    return e.what();
  }
  return "<no capcalc::Error>";
}

}  // namespace

TEST_CASE("parse_hardware reads corroboration and estimated peaks", "[hardware][errors]") {
  const HardwareTable t = capcalc::parse_hardware(one_device().dump(), "hw.json");
  const Device& d = t.devices.at(0);
  CHECK(d.corroboration == std::vector<std::string>{"https://example.org/copy"});
  CHECK(d.estimate_of(Precision::kFp16).vector == "2 x fp32, not published");
  CHECK(d.estimate_of(Precision::kFp16).matrix.empty());
  CHECK(d.estimate_of(Precision::kFp32).empty());

  nlohmann::json json = one_device();
  SECTION("a flag on a peak the device does not have") {
    json["devices"][0]["estimated_peaks"]["fp32"] = {{"matrix", "why"}};
    CHECK(error_of(json) ==
          "hw.json:/devices/0/estimated_peaks/fp32/matrix: no fp32 matrix peak in "
          "dense_peak_tflops to call an estimate");
  }
  SECTION("an unknown precision") {
    json["devices"][0]["estimated_peaks"]["fp17"] = {{"vector", "why"}};
    CHECK_THAT(error_of(json),
               ContainsSubstring("hw.json:/devices/0/estimated_peaks/fp17: unknown precision"));
  }
  SECTION("an empty reason") {
    json["devices"][0]["estimated_peaks"]["fp16"]["vector"] = "";
    CHECK(error_of(json) ==
          "hw.json:/devices/0/estimated_peaks/fp16/vector: say why the peak is an estimate");
  }
  SECTION("no unit") {
    json["devices"][0]["estimated_peaks"]["fp16"] = nlohmann::json::object();
    CHECK(error_of(json) ==
          "hw.json:/devices/0/estimated_peaks/fp16: give a \"vector\" or a \"matrix\" reason");
  }
  SECTION("a corroboration entry that is not a string") {
    json["devices"][0]["corroboration"] = {1};
    CHECK(error_of(json) == "hw.json:/devices/0/corroboration/0: expected a string, got a number");
  }
}
