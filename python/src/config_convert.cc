#include "config_convert.h"

#include <pybind11/stl.h>

#include <limits>
#include <variant>

#include "bindings.h"

namespace carton::python {
namespace {

std::string TypeName(py::handle value) { return Py_TYPE(value.ptr())->tp_name; }

[[noreturn]] void WrongType(const std::string& what, const std::string& wanted, py::handle value) {
  Raise(InvalidArgument(what + " must be " + wanted + ", not " + TypeName(value)));
}

std::string String(py::handle value, const std::string& what) {
  if (!PyUnicode_Check(value.ptr())) WrongType(what, "a str", value);
  return py::cast<std::string>(value);
}

// `d[key]`, or None when absent.
py::object Item(const py::dict& d, const char* key) {
  return d.contains(key) ? py::object(d[key]) : py::object(py::none());
}

py::object Optional(const std::optional<std::string>& s) {
  return s ? py::object(py::str(*s)) : py::object(py::none());
}

py::object DimensionToPython(const Dimension& d) {
  if (const auto* n = std::get_if<std::uint64_t>(&d)) return py::int_(*n);
  if (const auto* s = std::get_if<SymbolDim>(&d)) return py::str(s->name);
  return py::none();
}

py::object ShapeToPython(const Shape& shape) {
  if (std::holds_alternative<AnyDim>(shape)) return py::none();
  if (const auto* s = std::get_if<SymbolDim>(&shape)) return py::str(s->name);
  py::list dims;
  for (const Dimension& d : std::get<std::vector<Dimension>>(shape)) {
    dims.append(DimensionToPython(d));
  }
  return dims;
}

Dimension DimensionFromPython(py::handle value, const std::string& what) {
  if (value.is_none()) return AnyDim{};
  if (PyUnicode_Check(value.ptr())) {
    std::string name = py::cast<std::string>(value);
    if (name == "*") return AnyDim{};
    return SymbolDim{std::move(name)};
  }
  if (PyLong_Check(value.ptr()) && !PyBool_Check(value.ptr())) {
    int overflow = 0;
    const long long n = PyLong_AsLongLongAndOverflow(value.ptr(), &overflow);
    if (overflow != 0 || n < 0) {
      Raise(InvalidArgument(what + " is " + py::cast<std::string>(py::str(value)) +
                            ", not a size from 0 to 2^63-1"));
    }
    return static_cast<std::uint64_t>(n);
  }
  WrongType(what, "an int, a str or None", value);
}

Shape ShapeFromPython(py::handle value, const std::string& what) {
  if (value.is_none()) return AnyDim{};
  if (PyUnicode_Check(value.ptr())) {
    std::string name = py::cast<std::string>(value);
    if (name == "*") return AnyDim{};
    return SymbolDim{std::move(name)};
  }
  if (!PyList_Check(value.ptr()) && !PyTuple_Check(value.ptr())) {
    WrongType(what, "None, a str or a list of dimensions", value);
  }
  std::vector<Dimension> dims;
  std::size_t i = 0;
  for (py::handle d : value) {
    dims.push_back(DimensionFromPython(d, what + "[" + std::to_string(i++) + "]"));
  }
  return dims;
}

TensorSpec SpecFromPython(py::handle value, const std::string& what) {
  if (!PyDict_Check(value.ptr())) WrongType(what, "a dict", value);
  py::dict d = py::reinterpret_borrow<py::dict>(value);
  TensorSpec spec;
  spec.name = String(Item(d, "name"), what + ".name");
  const std::string dtype = String(Item(d, "dtype"), what + ".dtype");
  auto type = ParseDataType(dtype);
  if (!type) {
    Raise(InvalidArgument(what + " (\"" + spec.name + "\"): dtype \"" + dtype +
                          "\" is not a carton dtype (float32, float64, string, int8...int64, "
                          "uint8...uint64)"));
  }
  spec.dtype = *type;
  spec.shape = ShapeFromPython(Item(d, "shape"), what + ".shape");
  spec.description = OptionalString(Item(d, "description"), what + ".description");
  spec.internal_name = OptionalString(Item(d, "internal_name"), what + ".internal_name");
  return spec;
}

std::vector<TensorSpec> SpecsFromPython(py::handle value, const std::string& what) {
  std::vector<TensorSpec> out;
  if (value.is_none()) return out;
  if (!PyList_Check(value.ptr()) && !PyTuple_Check(value.ptr())) {
    WrongType(what, "a list", value);
  }
  std::size_t i = 0;
  for (py::handle v : value)
    out.push_back(SpecFromPython(v, what + "[" + std::to_string(i++) + "]"));
  return out;
}

py::dict RefsToPython(const TensorRefs& refs) {
  py::dict out;
  for (const auto& [k, v] : refs) out[py::str(k)] = py::str(v);
  return out;
}

}  // namespace

std::optional<std::string> OptionalString(py::handle value, const std::string& what) {
  if (value.is_none()) return std::nullopt;
  return String(value, what);
}

py::object OptToPython(const RunnerOpt& opt) {
  return std::visit(
      [](const auto& v) -> py::object {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, bool>) {
          return py::bool_(v);
        } else if constexpr (std::is_same_v<T, std::int64_t>) {
          return py::int_(v);
        } else if constexpr (std::is_same_v<T, double>) {
          return py::float_(v);
        } else {
          return py::str(v);
        }
      },
      opt);
}

py::dict SpecToPython(const TensorSpec& spec) {
  py::dict d;
  d["name"] = spec.name;
  d["dtype"] = std::string(DataTypeName(spec.dtype));
  d["shape"] = ShapeToPython(spec.shape);
  d["description"] = Optional(spec.description);
  d["internal_name"] = Optional(spec.internal_name);
  return d;
}

py::dict ConfigToPython(const CartonConfig& c) {
  py::dict d;
  d["spec_version"] = c.spec_version;
  d["model_name"] = Optional(c.model_name);
  d["short_description"] = Optional(c.short_description);
  d["model_description"] = Optional(c.model_description);
  d["license"] = Optional(c.license);
  d["repository"] = Optional(c.repository);
  d["homepage"] = Optional(c.homepage);
  d["required_platforms"] = py::cast(c.required_platforms);
  py::list inputs, outputs, self_tests, examples;
  for (const auto& s : c.inputs) inputs.append(SpecToPython(s));
  for (const auto& s : c.outputs) outputs.append(SpecToPython(s));
  for (const auto& t : c.self_tests) {
    py::dict e;
    e["name"] = Optional(t.name);
    e["description"] = Optional(t.description);
    e["inputs"] = RefsToPython(t.inputs);
    e["expected_out"] = t.expected_out ? py::object(RefsToPython(*t.expected_out)) : py::none();
    self_tests.append(std::move(e));
  }
  for (const auto& x : c.examples) {
    py::dict e;
    e["name"] = Optional(x.name);
    e["description"] = Optional(x.description);
    e["inputs"] = RefsToPython(x.inputs);
    e["sample_out"] = RefsToPython(x.sample_out);
    examples.append(std::move(e));
  }
  d["inputs"] = std::move(inputs);
  d["outputs"] = std::move(outputs);
  d["self_tests"] = std::move(self_tests);
  d["examples"] = std::move(examples);
  py::dict runner, opts;
  runner["runner_name"] = c.runner.runner_name;
  runner["required_framework_version"] = c.runner.required_framework_version;
  runner["runner_compat_version"] = c.runner.runner_compat_version;
  for (const auto& [k, v] : c.runner.opts) opts[py::str(k)] = OptToPython(v);
  runner["opts"] = std::move(opts);
  d["runner"] = std::move(runner);
  return d;
}

CartonConfig ConfigFromPython(const py::dict& d) {
  CartonConfig c;
  c.model_name = OptionalString(Item(d, "model_name"), "model_name");
  c.short_description = OptionalString(Item(d, "short_description"), "short_description");
  c.model_description = OptionalString(Item(d, "model_description"), "model_description");
  c.license = OptionalString(Item(d, "license"), "license");
  c.repository = OptionalString(Item(d, "repository"), "repository");
  c.homepage = OptionalString(Item(d, "homepage"), "homepage");
  py::object platforms = Item(d, "required_platforms");
  if (!platforms.is_none()) {
    if (PyUnicode_Check(platforms.ptr())) {
      WrongType("required_platforms", "a list of str", platforms);
    }
    std::size_t i = 0;
    for (py::handle p : platforms) {
      c.required_platforms.push_back(String(p, "required_platforms[" + std::to_string(i++) + "]"));
    }
  }
  c.inputs = SpecsFromPython(Item(d, "inputs"), "inputs");
  c.outputs = SpecsFromPython(Item(d, "outputs"), "outputs");
  c.runner.runner_name = String(Item(d, "runner_name"), "runner_name");
  c.runner.required_framework_version =
      String(Item(d, "required_framework_version"), "required_framework_version");
  py::object compat = Item(d, "runner_compat_version");
  if (!PyLong_Check(compat.ptr()) || PyBool_Check(compat.ptr())) {
    WrongType("runner_compat_version", "an int", compat);
  }
  int overflow = 0;
  const long long version = PyLong_AsLongLongAndOverflow(compat.ptr(), &overflow);
  if (overflow != 0 || version < 0) {
    Raise(InvalidArgument("runner_compat_version must be from 0 to 2^63-1"));
  }
  c.runner.runner_compat_version = static_cast<std::uint64_t>(version);
  c.runner.opts = OptsFromPython(Item(d, "runner_opts"));
  return c;
}

std::map<std::string, RunnerOpt> OptsFromPython(py::handle opts) {
  std::map<std::string, RunnerOpt> out;
  if (opts.is_none()) return out;
  if (!PyDict_Check(opts.ptr())) WrongType("runner_opts", "a dict", opts);
  for (auto [key, value] : py::reinterpret_borrow<py::dict>(opts)) {
    const std::string name = String(key, "a runner_opts key");
    const std::string what = "runner_opts[\"" + name + "\"]";
    if (PyBool_Check(value.ptr())) {
      out[name] = value.ptr() == Py_True;
    } else if (PyLong_Check(value.ptr())) {
      int overflow = 0;
      const long long n = PyLong_AsLongLongAndOverflow(value.ptr(), &overflow);
      if (overflow != 0) Raise(InvalidArgument(what + " does not fit a 64-bit integer"));
      out[name] = static_cast<std::int64_t>(n);
    } else if (PyFloat_Check(value.ptr())) {
      out[name] = PyFloat_AS_DOUBLE(value.ptr());
    } else if (PyUnicode_Check(value.ptr())) {
      out[name] = py::cast<std::string>(value);
    } else {
      WrongType(what, "a bool, an int, a float or a str", value);
    }
  }
  return out;
}

std::map<std::string, std::string> OptsAsText(const std::map<std::string, RunnerOpt>& opts) {
  std::map<std::string, std::string> out;
  for (const auto& [k, v] : opts) {
    out[k] = std::visit(
        [](const auto& x) -> std::string {
          using T = std::decay_t<decltype(x)>;
          if constexpr (std::is_same_v<T, bool>) {
            return x ? "true" : "false";
          } else if constexpr (std::is_same_v<T, std::int64_t>) {
            return std::to_string(x);
          } else if constexpr (std::is_same_v<T, double>) {
            return py::cast<std::string>(py::repr(py::float_(x)));
          } else {
            return x;
          }
        },
        v);
  }
  return out;
}

}  // namespace carton::python
