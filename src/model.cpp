#include "capcalc/model.hpp"

#include <algorithm>
#include <memory>
#include <utility>

#include <fmt/format.h>

#include "capcalc/error.hpp"
#include "capcalc/hardware.hpp"
#include "capcalc/names.hpp"
#include "capcalc/units.hpp"

#include "checked.hpp"
#include "expr.hpp"
#include "import/hf_config.hpp"
#include "import/onnx.hpp"
#include "import/onnx_text.hpp"
#include "input_file.hpp"
#include "json_view.hpp"
#include "limits.hpp"
#include "ops.hpp"
#include "spellcheck.hpp"

namespace capcalc {
namespace {

constexpr auto kCausalCountings =
    name_table<CausalCounting>({{CausalCounting::kFull, "full"}, {CausalCounting::kHalf, "half"}});

constexpr std::string_view kFormat = "capcalc-model/1";

const std::vector<std::string_view> kModelKeys = {
    "$schema", "format", "name",   "description", "source",  "comment",
    "dims",    "inputs", "blocks", "layers",      "outputs", "expert_weight_storage"};
const std::vector<std::string_view> kOpKeys = {"name",   "op",          "input",  "inputs",
                                               "repeat", "first_index", "comment"};
const std::vector<std::string_view> kCallKeys = {"name",   "block",  "args",        "input",
                                                 "inputs", "repeat", "first_index", "comment"};
const std::vector<std::string_view> kBlockKeys = {"args", "inputs", "layers", "output", "comment"};

// A block's "args": each default an integer, an expression or null (required), used or not (an
// object passed silently while no call left the argument out).
void check_arg_defaults(const JsonView& declared) {
  declared.expect_object();
  for (const auto& item : declared.json().items()) {
    const JsonView value = declared.at(item.key());
    if (value.is_null() || value.json().is_number_integer()) continue;
    if (value.is_string() && !value.as_string().empty()) continue;
    value.fail(fmt::format("a default is an integer, an expression or null, got {}",
                           json_type_name(value.json())));
  }
}

// The model's dims: the names every expression can see.
class DimScope : public NameScope {
 public:
  explicit DimScope(const std::map<std::string, std::int64_t>& dims) : dims_(dims) {}
  std::optional<std::int64_t> lookup(std::string_view name) const override {
    const auto it = dims_.find(std::string(name));
    if (it == dims_.end()) return std::nullopt;
    return it->second;
  }
  std::vector<std::string> names() const override {
    std::vector<std::string> names;
    for (const auto& [name, value] : dims_)
      names.push_back(name);
    return names;
  }

 private:
  const std::map<std::string, std::int64_t>& dims_;
};

// A block call's args: values passed by the caller, then the block's defaults (evaluated
// lazily in this scope, so a default may use other args), then the model's dims.
class ArgScope : public NameScope {
 public:
  ArgScope(std::map<std::string, std::int64_t> passed, std::optional<JsonView> defaults,
           const NameScope& dims)
      : values_(std::move(passed)), defaults_(std::move(defaults)), dims_(dims) {}

  std::optional<std::int64_t> lookup(std::string_view name) const override {
    const std::string key(name);
    if (auto it = values_.find(key); it != values_.end()) return it->second;
    if (defaults_) {
      if (auto def = defaults_->find(key); def && !def->is_null()) {
        if (std::find(evaluating_.begin(), evaluating_.end(), key) != evaluating_.end()) {
          def->fail(fmt::format("the default of \"{}\" refers to itself", key));
        }
        if (evaluating_.size() >= static_cast<std::size_t>(kMaxDefaultChain)) {
          def->fail(
              fmt::format("argument defaults refer to one another more than {} deep (the "
                          "limit)",
                          kMaxDefaultChain));
        }
        evaluating_.push_back(key);
        std::int64_t value = 0;
        if (def->is_string()) {
          try {
            value = evaluate_expression(def->as_string(), *this);
          } catch (const ExpressionError& e) {
            def->fail(e.what());
          } catch (const OverflowError&) {
            def->fail("expression overflows a 64-bit integer");
          }
        } else {
          value = def->as_integer();
        }
        evaluating_.pop_back();
        values_[key] = value;
        return value;
      }
    }
    return dims_.lookup(name);
  }

  std::vector<std::string> names() const override {
    std::vector<std::string> names = dims_.names();
    for (const auto& [name, value] : values_)
      names.push_back(name);
    if (defaults_) {
      for (const auto& item : defaults_->json().items())
        names.push_back(item.key());
    }
    std::sort(names.begin(), names.end());
    names.erase(std::unique(names.begin(), names.end()), names.end());
    return names;
  }

 private:
  mutable std::map<std::string, std::int64_t> values_;
  std::optional<JsonView> defaults_;
  const NameScope& dims_;
  mutable std::vector<std::string> evaluating_;
};

std::int64_t evaluate_positive(const JsonView& value, const NameScope& scope) {
  std::int64_t result = 0;
  if (value.is_string()) {
    try {
      result = evaluate_expression(value.as_string(), scope);
    } catch (const ExpressionError& e) {
      value.fail(e.what());
    } catch (const OverflowError&) {
      value.fail("expression overflows a 64-bit integer");
    }
  } else if (value.json().is_number_integer()) {
    result = value.as_integer();
  } else {
    value.fail("expected a positive integer or an expression string, got " +
               json_type_name(value.json()));
  }
  if (result <= 0) value.fail(fmt::format("expected a positive integer, got {}", result));
  return result;
}

// One level of naming: the top level, or one block call.
struct Env {
  std::string prefix;                                      // "layer1.0." inside a call.
  std::map<std::string, std::int32_t, std::less<>> names;  // Local name -> value id.
  std::int32_t previous = 0;                               // What an entry reads by default.
  std::int32_t last = -1;                                  // The value of the last entry.
  const NameScope* scope = nullptr;
  int depth = 0;
};

class Builder {
 public:
  Builder(Graph& graph, const JsonView& root, const ModelOptions& options)
      : graph_(graph), root_(root), options_(options), dim_scope_(graph.dims) {}

  void build() {
    root_.expect_object();
    reject_unknown_keys(root_, kModelKeys, "the model");
    const JsonView format = root_.at("format");
    if (format.as_string() != kFormat) {
      format.fail(
          fmt::format("unsupported format \"{}\"; expected \"{}\"", format.as_string(), kFormat));
    }
    graph_.name = root_.at("name").as_string();
    if (auto text = root_.find("description")) graph_.description = text->as_string();
    if (auto text = root_.find("source")) graph_.source = text->as_string();
    if (auto storage = root_.find("expert_weight_storage")) {
      if (!parse_precision(storage->as_string())) {
        storage->fail(unknown_precision_message(storage->as_string()));
      }
      graph_.expert_weight_storage = storage->as_string();
    }
    read_dims();
    if (auto blocks = root_.find("blocks")) {
      blocks->expect_object();
      blocks_ = blocks;
    }

    Env top;
    top.scope = &dim_scope_;
    read_inputs(top);
    const JsonView layers = root_.at("layers");
    if (layers.array_size() == 0) layers.fail("a model needs at least one layer");
    // Room for the layers the entries add at least (at most 65,536, whatever a file claims):
    // the vector is not grown and copied as they come.
    graph_.layers.reserve(
        static_cast<std::size_t>(std::min<std::int64_t>(least_layers_of(layers, 0), 65'536)));
    build_list(layers, top);

    if (auto outputs = root_.find("outputs")) {
      for (std::size_t i = 0; i < outputs->array_size(); ++i) {
        graph_.outputs.push_back(lookup(outputs->at(i), top));
      }
    } else {
      graph_.outputs.push_back(top.last);
    }
    omit_inputs();
  }

 private:
  void read_dims() {
    if (auto dims = root_.find("dims")) {
      dims->expect_object();
      for (const auto& item : dims->json().items()) {
        graph_.dims[item.key()] = dims->at(item.key()).as_positive_int();
      }
    }
    for (const auto& [name, value] : options_.dims) {
      if (graph_.dims.count(name) == 0) {
        std::vector<std::string_view> known;
        for (const auto& [dim, unused] : graph_.dims)
          known.push_back(dim);
        std::string message = with_suggestion(
            fmt::format("the model has no dimension \"{}\" to set", name), name, known);
        message += known.empty() ? " (it declares no dims)"
                                 : fmt::format(" (its dims: {})", fmt::join(known, ", "));
        throw Error({root_.file(), "/dims", 0, 0}, message);
      }
      if (value <= 0) {
        throw Error({root_.file(), "/dims", 0, 0},
                    fmt::format("dimension \"{}\" must be positive, got {}", name, value));
      }
      graph_.dims[name] = value;
    }
    if (auto it = graph_.dims.find("batch"); it != graph_.dims.end()) graph_.batch = it->second;
  }

  void omit_inputs() {
    if (options_.omitted_inputs.empty()) return;
    std::vector<std::string_view> names;
    for (const GraphInput& input : graph_.inputs)
      names.push_back(input.name);
    for (const std::string& name : options_.omitted_inputs) {
      const auto it = std::find_if(graph_.inputs.begin(), graph_.inputs.end(),
                                   [&](const GraphInput& input) { return input.name == name; });
      if (it == graph_.inputs.end()) {
        throw Error({root_.file(), "/inputs", 0, 0},
                    with_suggestion(fmt::format("the model has no input \"{}\" to omit (its "
                                                "inputs: {})",
                                                name, fmt::join(names, ", ")),
                                    name, names));
      }
      if (!it->optional) {
        throw Error({root_.file(), fmt::format("/inputs/{}", it - graph_.inputs.begin()), 0, 0},
                    fmt::format("input \"{}\" is not optional: the model needs it", name));
      }
      it->omitted = true;
    }
    omit_input_layers(graph_);
  }

  void read_inputs(Env& top) {
    const JsonView inputs = root_.at("inputs");
    if (inputs.array_size() == 0) inputs.fail("a model needs at least one input");
    for (std::size_t i = 0; i < inputs.array_size(); ++i) {
      const JsonView input = inputs.at(i);
      reject_unknown_keys(input, {"name", "shape", "dtype", "prefill_only", "optional", "comment"},
                          "an input");
      GraphInput graph_input;
      graph_input.name = input.at("name").as_string();
      if (graph_input.name.empty()) input.at("name").fail("a name must not be empty");
      if (auto dtype = input.find("dtype")) {  // Not used in counts, but typed like the rest.
        if (dtype->as_string().empty()) dtype->fail("a dtype must not be empty");
      }
      if (auto once = input.find("prefill_only")) graph_input.prefill_only = once->as_bool();
      if (auto optional = input.find("optional")) graph_input.optional = optional->as_bool();
      const JsonView shape = input.at("shape");
      for (std::size_t a = 0; a < shape.array_size(); ++a) {
        graph_input.shape.push_back(evaluate_positive(shape.at(a), dim_scope_));
      }
      define(top, graph_input.name, static_cast<std::int32_t>(i), input.at("name"));
      graph_.inputs.push_back(std::move(graph_input));
      needs_grad_.push_back(false);
    }
    top.previous = 0;
  }

  void define(Env& env, const std::string& name, std::int32_t value, const JsonView& where) {
    if (!env.names.emplace(name, value).second) {
      where.fail(fmt::format("the name \"{}\" is already used in this scope", name));
    }
  }

  std::int32_t lookup(const JsonView& reference, const Env& env) const {
    const std::string name = reference.as_string();
    if (auto it = env.names.find(name); it != env.names.end()) return it->second;
    std::vector<std::string_view> known;
    for (const auto& [known_name, value] : env.names)
      known.push_back(known_name);
    reference.fail(with_suggestion(
        fmt::format("no layer or input named \"{}\" in this scope", name), name, known));
  }

  std::vector<std::int32_t> resolve_inputs(const JsonView& entry, const Env& env) const {
    const std::optional<JsonView> one = entry.find("input");
    const std::optional<JsonView> many = entry.find("inputs");
    if (one && many) entry.fail("give \"input\" or \"inputs\", not both");
    if (one) return {lookup(*one, env)};
    if (many) {
      std::vector<std::int32_t> values;
      for (std::size_t i = 0; i < many->array_size(); ++i)
        values.push_back(lookup(many->at(i), env));
      if (values.empty()) many->fail("expected at least one input");
      return values;
    }
    return {env.previous};
  }

  void build_list(const JsonView& layers, Env& env) {
    for (std::size_t i = 0; i < layers.array_size(); ++i)
      build_entry(layers.at(i), i, env);
  }

  void build_entry(const JsonView& entry, std::size_t position, Env& env) {
    entry.expect_object();
    const std::optional<JsonView> op = entry.find("op");
    const std::optional<JsonView> block = entry.find("block");
    if (op.has_value() == block.has_value())
      entry.fail("a layer needs exactly one of \"op\" and \"block\"");
    const std::string kind = op ? op->as_string() : block->as_string();
    const std::optional<JsonView> given = entry.find("name");
    std::string name;
    if (given) {
      name = given->as_string();
      if (name.empty()) given->fail("a name must not be empty");
    } else {
      name = fmt::format("{}_{}", kind, position);
    }
    std::int64_t repeat = 1;
    std::int64_t first_index = 0;
    const std::optional<JsonView> repeat_value = entry.find("repeat");
    if (repeat_value) repeat = evaluate_positive(*repeat_value, *env.scope);
    if (auto first = entry.find("first_index")) {
      if (!repeat_value) first->fail("\"first_index\" goes with \"repeat\"");
      first_index = first->as_integer();
      if (first_index < 0) first->fail("expected a non-negative integer");
      if (first_index > INT64_MAX - repeat) {
        first->fail(fmt::format("first_index {} + repeat {} does not fit in a 64-bit integer",
                                first_index, repeat));
      }
    }

    std::vector<std::int32_t> inputs = resolve_inputs(entry, env);
    std::int32_t result = -1;
    check_expansion(repeat_value ? *repeat_value : entry,
                    saturating_mul(repeat, block ? least_layers(block->as_string(), 0) : 1));
    expanding_.push_back({repeat_value ? *repeat_value : entry, repeat, 0});
    for (std::int64_t r = 0; r < repeat; ++r) {
      expanding_.back().done = r;
      if (env.depth == 0) group_ = next_group_++;  // Each top-level instance is a group.
      const std::string local = repeat_value ? fmt::format("{}.{}", name, first_index + r) : name;
      const std::string full = env.prefix + local;
      result =
          op ? add_op(entry, *op, full, inputs, env) : call_block(entry, *block, full, inputs, env);
      if (repeat_value) define(env, local, result, entry);
      inputs = {result};
    }
    expanding_.pop_back();
    define(env, name, result, given ? *given : entry);
    env.previous = result;
    env.last = result;
  }

  // Products past the limit only need to stay past it.
  static std::int64_t saturating_mul(std::int64_t a, std::int64_t b) {
    return b != 0 && a > (kMaxLayers + 1) / b ? kMaxLayers + 1 : a * b;
  }

  // The fewest layers one call of a block can add: each entry one instance per repeat known
  // before the call (least_repeat), a call the fewest of its block. It
  // makes blocks that double the layers at each level fail before they are built. Unknown
  // blocks and calls nested past the limit count 1; their errors come when they are built.
  std::int64_t least_layers(const std::string& block, int depth) {
    if (depth > kMaxBlockDepth || !blocks_) return 1;
    if (auto known = least_layers_.find(block); known != least_layers_.end()) return known->second;
    const std::optional<JsonView> def = blocks_->find(block);
    const std::optional<JsonView> layers =
        def && def->is_object() ? def->find("layers") : std::nullopt;
    if (!layers || !layers->is_array()) return 1;
    least_layers_[block] = 1;  // A block that calls itself: its depth is the error.
    least_layers_[block] = std::max<std::int64_t>(least_layers_of(*layers, depth + 1), 1);
    return least_layers_[block];
  }

  // The same for a list of entries, its calls at `depth`.
  std::int64_t least_layers_of(const JsonView& layers, int depth) {
    std::int64_t total = 0;
    for (std::size_t i = 0; i < layers.array_size() && total <= kMaxLayers; ++i) {
      const JsonView entry = layers.at(i);
      if (!entry.is_object()) continue;
      std::int64_t instances = 1;
      if (auto repeat = entry.find("repeat")) instances = least_repeat(*repeat);
      const std::optional<JsonView> call = entry.find("block");
      const std::int64_t each =
          call && call->is_string() ? least_layers(call->as_string(), depth) : 1;
      total = std::min(kMaxLayers + 1, total + saturating_mul(instances, each));
    }
    return total;
  }

  // A repeat's value where it is known before the call (a literal, or an expression of the
  // model's dims), else 1.
  std::int64_t least_repeat(const JsonView& repeat) const {
    try {
      const std::int64_t n = repeat.is_string()
                                 ? evaluate_expression(repeat.as_string(), dim_scope_)
                             : repeat.json().is_number_integer() ? repeat.as_integer()
                                                                 : 1;
      return std::max<std::int64_t>(n, 1);
    } catch (const std::exception&) {  // Block args, bad values: their errors come later.
      return 1;
    }
  }

  // Each instance still to come of the entries around this one expands it again: with the
  // fewest layers it adds, a lower bound on the layers ahead, checked before any is built, so
  // that a repeat of 10^12 fails at once.
  void check_expansion(const JsonView& place, std::int64_t least) const {
    std::int64_t ahead = least;
    for (const Expansion& outer : expanding_)
      ahead = saturating_mul(ahead, outer.count - outer.done);
    const auto built = static_cast<std::int64_t>(graph_.layers.size());
    if (ahead > kMaxLayers - built) fail_expansion(place, least);
  }

  // Names the entry that multiplies the layers most (the outermost of equals): the repeat of
  // 10^12, or the top-level call of blocks that double the layers at each level.
  [[noreturn]] void fail_expansion(const JsonView& place, std::int64_t repeat) const {
    const JsonView* culprit = &place;
    std::int64_t most = repeat;
    for (auto it = expanding_.rbegin(); it != expanding_.rend(); ++it) {
      if (it->count >= most) {
        culprit = &it->place;
        most = it->count;
      }
    }
    culprit->fail(fmt::format("the model expands to more than {} layers (the limit)",
                              format_grouped(kMaxLayers)));
  }

  std::int32_t add_op(const JsonView& entry, const JsonView& op, const std::string& full_name,
                      const std::vector<std::int32_t>& inputs, const Env& env) {
    if (static_cast<std::int64_t>(graph_.layers.size()) >= kMaxLayers) fail_expansion(entry, 1);
    const std::string op_name = op.as_string();
    const OpKind* kind = find_op(op_name);
    if (kind == nullptr) {
      op.fail(
          with_suggestion(fmt::format("layer \"{}\": unknown operator \"{}\"", full_name, op_name),
                          op_name, op_names()));
    }
    const auto count = static_cast<int>(inputs.size());
    if (count < kind->min_inputs || (kind->max_inputs >= 0 && count > kind->max_inputs)) {
      const std::string expected =
          kind->max_inputs < 0 ? fmt::format("at least {}", kind->min_inputs)
          : kind->min_inputs == kind->max_inputs
              ? fmt::format("{}", kind->min_inputs)
              : fmt::format("{} to {}", kind->min_inputs, kind->max_inputs);
      entry.fail(fmt::format("layer \"{}\": {} takes {} input{}, got {}", full_name, op_name,
                             expected, expected == "1" ? "" : "s", count));
    }

    Attributes attrs(entry, *env.scope, full_name);
    OpContext ctx{attrs, {}, {}, options_.counting, [&](const std::string& name) -> const Layer* {
                    const auto it = env.names.find(name);
                    if (it == env.names.end()) return nullptr;
                    const auto value = static_cast<std::size_t>(it->second);
                    if (value < graph_.inputs.size()) return nullptr;
                    return &graph_.layers[value - graph_.inputs.size()];
                  }};
    bool needs_grad = false;
    for (std::int32_t value : inputs) {
      ctx.inputs.push_back(&graph_.value_shape(value));
      ctx.input_needs_grad.push_back(needs_grad_[static_cast<std::size_t>(value)]);
      needs_grad = needs_grad || needs_grad_[static_cast<std::size_t>(value)];
    }
    OpResult result;
    try {
      result = kind->infer(ctx);
    } catch (const OverflowError&) {
      entry.fail(fmt::format("layer \"{}\": {}", full_name, overflow_message(options_.dims)));
    }
    attrs.reject_unknown(kOpKeys, op_name);

    Layer layer;
    layer.name = full_name;
    layer.op = op_name;
    layer.inputs = inputs;
    layer.output = std::move(result.output);
    layer.counts = result.counts;
    layer.counts.active_params = result.active_params.value_or(layer.counts.params);
    layer.view = result.view;
    layer.traits = {kind->op_class,
                    kind->fusion,
                    result.gemm,
                    result.rotary,
                    result.weight_tensors,
                    result.bias_tensors,
                    result.param_tensors > 0    ? result.param_tensors
                    : result.weight_tensors > 0 ? result.weight_tensors
                                                : (layer.counts.params > 0 ? 1 : 0),
                    result.adapters};
    layer.definition = entry.pointer();
    layer.group = group_;
    needs_grad_.push_back(needs_grad || layer.counts.params > 0);
    graph_.layers.push_back(std::move(layer));
    return graph_.layer_value(graph_.layers.size() - 1);
  }

  std::int32_t call_block(const JsonView& entry, const JsonView& block,
                          const std::string& full_name, const std::vector<std::int32_t>& inputs,
                          const Env& env) {
    reject_unknown_keys(entry, kCallKeys, "a block call");
    const std::string block_name = block.as_string();
    std::optional<JsonView> def = blocks_ ? blocks_->find(block_name) : std::nullopt;
    if (!def) {
      std::vector<std::string_view> known;
      if (blocks_) {
        for (const auto& item : blocks_->json().items())
          known.push_back(item.key());
      }
      block.fail(
          with_suggestion(fmt::format("unknown block \"{}\"", block_name), block_name, known));
    }
    if (env.depth >= kMaxBlockDepth) {
      block.fail(fmt::format("blocks nest more than {} deep (does \"{}\" call itself?)",
                             kMaxBlockDepth, block_name));
    }
    reject_unknown_keys(*def, kBlockKeys, "a block");

    // Arguments, evaluated in the caller's scope.
    const std::optional<JsonView> declared = def->find("args");
    if (declared) check_arg_defaults(*declared);
    std::map<std::string, std::int64_t> passed;
    if (auto args = entry.find("args")) {
      args->expect_object();
      for (const auto& item : args->json().items()) {
        const JsonView value = args->at(item.key());
        if (!declared || !declared->find(item.key())) {
          std::vector<std::string_view> known;
          if (declared) {
            for (const auto& arg : declared->json().items())
              known.push_back(arg.key());
          }
          value.fail(with_suggestion(
              fmt::format("block \"{}\" has no argument \"{}\"", block_name, item.key()),
              item.key(), known));
        }
        if (value.is_string()) {
          try {
            passed[item.key()] = evaluate_expression(value.as_string(), *env.scope);
          } catch (const ExpressionError& e) {
            value.fail(e.what());
          } catch (const OverflowError&) {
            value.fail("expression overflows a 64-bit integer");
          }
        } else {
          passed[item.key()] = value.as_integer();
        }
      }
    }
    if (declared) {
      for (const auto& item : declared->json().items()) {
        if (item.value().is_null() && passed.count(item.key()) == 0) {
          entry.fail(fmt::format("layer \"{}\": block \"{}\" needs the argument \"{}\"", full_name,
                                 block_name, item.key()));
        }
      }
    }
    auto scope = std::make_unique<ArgScope>(std::move(passed), declared, dim_scope_);

    // The block's inputs, named.
    Env inner;
    inner.prefix = full_name + ".";
    inner.scope = scope.get();
    inner.depth = env.depth + 1;
    std::vector<std::string> input_names{"x"};
    if (auto names = def->find("inputs")) {
      input_names.clear();
      for (std::size_t i = 0; i < names->array_size(); ++i) {
        input_names.push_back(names->at(i).as_string());
      }
    }
    if (input_names.size() != inputs.size()) {
      entry.fail(fmt::format("layer \"{}\": block \"{}\" takes {} input(s), got {}", full_name,
                             block_name, input_names.size(), inputs.size()));
    }
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      define(inner, input_names[i], inputs[i], *def);
    }
    inner.previous = inputs.front();
    const JsonView layers = def->at("layers");
    if (layers.array_size() == 0) layers.fail("a block needs at least one layer");
    build_list(layers, inner);
    if (auto output = def->find("output")) return lookup(*output, inner);
    return inner.last;
  }

  Graph& graph_;
  const JsonView& root_;
  const ModelOptions& options_;
  DimScope dim_scope_;
  std::optional<JsonView> blocks_;
  // The entries being expanded, outermost first.
  struct Expansion {
    JsonView place;      // The entry's "repeat", or the entry.
    std::int64_t count;  // Its repeat.
    std::int64_t done;   // Instances built.
  };
  std::vector<Expansion> expanding_;
  std::map<std::string, std::int64_t> least_layers_;  // Per block, least_layers().
  std::vector<bool> needs_grad_;  // Per value: does its gradient need computing?
  std::int32_t group_ = 0;        // Group of the layers being added.
  std::int32_t next_group_ = 0;
};

// The native format's one entry point: every input format ends here as a native document.
Graph build_model(const nlohmann::json& document, const std::string& file,
                  const ModelOptions& options) {
  Graph graph;
  const JsonView root(document, file);
  Builder(graph, root, options).build();
  return graph;
}

}  // namespace

Graph parse_model(std::string_view text, const std::string& file, const ModelOptions& options) {
  // Whole input shapes are an ONNX notion; dropping them here would go unnoticed.
  if (!options.input_shapes.empty()) {
    throw Error::naming_keys(
        {file}, fmt::format("input shapes (`input_shapes` {}=...) are for ONNX models; set this "
                            "model's dimensions with `dims` NAME=VALUE",
                            Error::verbatim(options.input_shapes.begin()->first)));
  }
  const nlohmann::json document = parse_json_text(text, file);
  if (is_hf_config(document)) {
    nlohmann::json model = hf_config_to_model(document, file);
    if (options.mtp_layers > 0) add_mtp_modules(model, options.mtp_layers, file);
    Graph graph = build_model(model, file, options);
    mark_mtp_modules(graph, options.mtp_layers);
    return graph;
  }
  reject_mtp_modules(options.mtp_layers, file);
  return build_model(document, file, options);
}

Graph load_model(const std::string& path, const ModelOptions& options) {
  // ONNX by extension: protobuf has no reliable magic number.
  const auto ends_with = [&path](std::string_view suffix) {
    return path.size() >= suffix.size() &&
           path.compare(path.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  const bool text = ends_with(".onnxtxt") || ends_with(".onnxtext");
  const bool proto = ends_with(".textproto") || ends_with(".pbtxt");
  if (!ends_with(".onnx") && !text && !proto) {
    return parse_model(read_input_file(path), path, options);
  }
  reject_mtp_modules(options.mtp_layers, path);
  if (text || proto) {
    return load_onnx_text_model(path, text ? OnnxTextSyntax::onnx : OnnxTextSyntax::protobuf,
                                options);
  }
  return load_onnx_model(path, options);
}

std::vector<std::string_view> operator_names() {
  return op_names();
}

std::string_view causal_counting_name(CausalCounting counting) {
  return kCausalCountings.name(counting);
}

std::optional<CausalCounting> parse_causal_counting(std::string_view name) {
  return kCausalCountings.parse(name);
}

std::vector<std::string_view> causal_counting_names() {
  return kCausalCountings.names();
}

}  // namespace capcalc
