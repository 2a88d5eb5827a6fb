// The standard runner command line (RunnerMain) and the serve loop.
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>

#include "carton/loader/environment.h"
#include "carton/loader/loader.h"
#include "carton/runner/runner.h"
#include "carton/runner/self_test.h"
#include "carton/runner/tensor_file.h"
#include "wire.h"

namespace carton::runner {
namespace {

// RunnerDevice(): written once by RunnerMain before Load, then only read.
loader::Device& CurrentDevice() {
  static loader::Device device;
  return device;
}

using Json = nlohmann::ordered_json;

struct Args {
  std::string command;
  std::string model;
  std::vector<std::string> inputs;
  std::string output;
  std::map<std::string, std::string> opts;
  int fd = -1;
  bool json = false;
  bool lenient = false;
  // --device NAME, or --default-device NAME (the caller did not choose).
  std::string device;
  bool device_default = false;
  safetensors::CompareOptions compare;
};

int ExitCodeFor(const Status& s) {
  if (s.ok()) return 0;
  return s.code() == StatusCode::kCorrupt || s.code() == StatusCode::kUnsupported ? 1 : 2;
}

class Main {
 public:
  Main(std::string program, Runner& runner) : program_(std::move(program)), runner_(runner) {}

  int Fail(const std::string& command, const Status& s) {
    std::fprintf(stderr, "%s %s: %s\n", program_.c_str(), command.c_str(), s.message().c_str());
    return ExitCodeFor(s);
  }

  Result<Args> Parse(int argc, char** argv) {
    Args a;
    if (argc < 2) return InvalidArgument(Usage());
    a.command = argv[1];
    auto value = [&](int& i, const std::string& flag) -> Result<std::string> {
      if (i + 1 >= argc) return InvalidArgument(flag + " needs a value");
      return std::string(argv[++i]);
    };
    auto number = [](const std::string& flag, const std::string& v) -> Result<double> {
      char* end = nullptr;
      double d = std::strtod(v.c_str(), &end);
      if (v.empty() || *end != '\0' || !(d >= 0)) {
        return InvalidArgument(flag + ": \"" + v + "\" is not a non-negative number");
      }
      return d;
    };
    for (int i = 2; i < argc; ++i) {
      std::string arg = argv[i];
      if (arg == "--input") {
        CARTON_ASSIGN_OR_RETURN(std::string v, value(i, arg));
        a.inputs.push_back(v);
      } else if (arg == "--output") {
        CARTON_ASSIGN_OR_RETURN(a.output, value(i, arg));
      } else if (arg == "--opt") {
        CARTON_ASSIGN_OR_RETURN(std::string v, value(i, arg));
        auto eq = v.find('=');
        if (eq == std::string::npos || eq == 0) return InvalidArgument("--opt wants KEY=VALUE");
        a.opts[v.substr(0, eq)] = v.substr(eq + 1);
      } else if (arg == "--fd") {
        CARTON_ASSIGN_OR_RETURN(std::string v, value(i, arg));
        a.fd = std::atoi(v.c_str());
      } else if (arg == "--rtol" || arg == "--atol") {
        CARTON_ASSIGN_OR_RETURN(std::string v, value(i, arg));
        CARTON_ASSIGN_OR_RETURN(double d, number(arg, v));
        (arg == "--rtol" ? a.compare.rtol : a.compare.atol) = d;
      } else if (arg == "--json") {
        a.json = true;
      } else if (arg == "--lenient") {
        a.lenient = true;
      } else if (arg == "--device" || arg == "--default-device") {
        CARTON_ASSIGN_OR_RETURN(a.device, value(i, arg));
        a.device_default = arg == "--default-device";
      } else if (!arg.empty() && arg[0] == '-') {
        return InvalidArgument("unknown option " + arg + "\n" + Usage());
      } else if (a.model.empty()) {
        a.model = arg;
      } else {
        return InvalidArgument("unexpected argument " + arg);
      }
    }
    if (a.command != "info" && a.model.empty())
      return InvalidArgument(a.command + ": MODEL is required");
    return a;
  }

  std::string Usage() const {
    return "usage: " + program_ +
           " info | self-test MODEL [--rtol R] [--atol A] [--json] | infer MODEL --input "
           "NAME=FILE.safetensors[:TENSOR]... --output OUT.safetensors | serve MODEL --fd N; "
           "each takes --opt KEY=VALUE, --lenient (declarations that do not hold are "
           "warnings) and --device cpu|GPU-<uuid>|MIG-<uuid>";
  }

  // Loads the carton and the model into the runner.
  Result<loader::LoadedCarton> LoadModel(const Args& a) {
    // The carton a caller hands a runner is a cache entry or a directory it
    // loaded already; anything else is loaded with the process's defaults.
    CARTON_ASSIGN_OR_RETURN(const Environment env, loader::DefaultEnvironment());
    CARTON_ASSIGN_OR_RETURN(auto source, OpenSource(a.model, env));
    CARTON_ASSIGN_OR_RETURN(loader::LoadedCarton loaded, loader::Load(*source));
    loaded_ = std::make_unique<loader::LoadedCarton>(loaded);
    RunnerIdentity id = runner_.Identity();
    if (loaded.config().runner.runner_name != id.runner_name) {
      return InvalidArgument(a.model + ": the carton needs runner \"" +
                             loaded.config().runner.runner_name + "\", this is \"" +
                             id.runner_name + "\"");
    }
    LoadContext ctx;
    ctx.config = loaded.config();
    ctx.opts = loaded.config().runner.opts;
    for (const auto& [k, v] : a.opts) ctx.opts[k] = ParseRunnerOpt(v);
    ctx.root_dir = loaded.root_dir();
    ctx.carton = loaded_.get();
    ctx.lenient = a.lenient;
    ctx.caller_checks_inputs = a.command == "serve";
    CARTON_ASSIGN_OR_RETURN(ctx.device, DeviceOf(a));
    CurrentDevice() = ctx.device;
    Status s = runner_.Load(loaded.model_dir(), ctx);
    if (!s.ok()) return s.WithContext("loading " + loaded.model_dir());
    return loaded;
  }

  // The device of --device or --default-device, made the only one CUDA
  // sees in this process (before the runner loads anything that starts
  // CUDA); without either, the default as this process sees it.
  static Result<loader::Device> DeviceOf(const Args& a) {
    if (a.device.empty()) return loader::DefaultDevice();
    CARTON_ASSIGN_OR_RETURN(loader::Device device,
                            loader::DeviceForRunner(a.device, !a.device_default));
    if (::setenv("CUDA_VISIBLE_DEVICES", device.VisibleDevices().c_str(), 1) != 0) {
      return Internal("cannot set CUDA_VISIBLE_DEVICES");
    }
    return device;
  }

  int Info() {
    RunnerIdentity id = runner_.Identity();
    Json j;
    j["runner_name"] = id.runner_name;
    j["framework_version"] = id.framework_version;
    j["runner_compat_version"] = id.runner_compat_version;
    j["protocol_version"] = kProtocolVersion;
    std::cout << j.dump() << "\n";
    return 0;
  }

  int SelfTest(const Args& a) {
    auto loaded = LoadModel(a);
    if (!loaded.ok()) return Fail("self-test", loaded.status());
    auto report = RunSelfTests(
        *loaded, [&](const std::vector<Tensor>& in) { return runner_.Infer(in); }, a.compare);
    std::cout << (a.json ? FormatReportJson(report) : FormatReport(report));
    return report.passed() ? 0 : 1;
  }

  int Infer(const Args& a) {
    if (a.output.empty()) return Fail("infer", InvalidArgument("--output is required"));
    auto loaded = LoadModel(a);
    if (!loaded.ok()) return Fail("infer", loaded.status());
    std::vector<Tensor> inputs;
    for (const auto& spec : a.inputs) {
      auto t = ReadTensorArg(spec);
      if (!t.ok()) return Fail("infer", t.status());
      inputs.push_back(std::move(t).value());
    }
    auto outputs = runner_.Infer(inputs);
    if (!outputs.ok()) return Fail("infer", outputs.status());
    Status s = WriteTensorsFile(a.output, *outputs);
    if (!s.ok()) return Fail("infer", s);
    return 0;
  }

  int Serve(const Args& a) {
    if (a.fd < 0) return Fail("serve", InvalidArgument("--fd is required"));
    auto loaded = LoadModel(a);
    if (!loaded.ok()) {
      // The caller shows the error (with a model's traceback) once: it is
      // written to stderr only when it cannot be sent.
      Status sent = internal::SendMessage(a.fd, internal::ErrorReply(loaded.status()), -1);
      if (!sent.ok()) return Fail("serve", loaded.status());
      return ExitCodeFor(loaded.status());
    }
    Json ready = {{"ok", true}, {"protocol_version", kProtocolVersion}};
    if (Status s = internal::SendMessage(a.fd, ready.dump(), -1); !s.ok()) return Fail("serve", s);
    internal::ArenaReader inputs;    // the caller's requests
    internal::OutputArenas outputs;  // our replies
    for (;;) {
      auto m = internal::ReceiveMessage(a.fd, -1);
      if (!m.ok()) {
        if (m.status().code() == StatusCode::kNotFound) return 0;  // the caller went away
        return Fail("serve", m.status());
      }
      std::string op;
      std::size_t size = 0;
      std::vector<int> busy;
      Status s;
      try {
        auto j = nlohmann::json::parse(m->text);
        op = j.at("op").get<std::string>();
        if (op == "infer") {
          size = j.at("size").get<std::size_t>();
          // The output arenas the caller still holds views into.
          if (auto it = j.find("busy"); it != j.end()) {
            if (!it->is_array()) {
              s = InvalidArgument("infer request: \"busy\" is not a list");
            } else {
              for (const auto& id : *it) {
                if (!id.is_number_integer()) {
                  s = InvalidArgument("infer request: \"busy\" holds " + id.dump() +
                                      ", not an arena number");
                  break;
                }
                busy.push_back(id.get<int>());
              }
            }
          }
        }
      } catch (const std::exception&) {
        op = "";
      }
      if (op == "close") return 0;
      if (s.ok()) s = Answer(op, size, busy, std::move(m->fd), &inputs, &outputs, a.fd);
      if (s.ok()) continue;
      if (Status e = internal::SendMessage(a.fd, internal::ErrorReply(s), -1); !e.ok()) {
        return Fail("serve", e);
      }
    }
  }

  // Runs one request; OK once the reply is sent.
  Status Answer(const std::string& op, std::size_t size, const std::vector<int>& busy, UniqueFd fd,
                internal::ArenaReader* inputs, internal::OutputArenas* outputs, int sock) {
    if (op != "infer") return InvalidArgument("unknown request");
    if (fd.valid()) CARTON_RETURN_IF_ERROR(inputs->Adopt(std::move(fd)));
    CARTON_ASSIGN_OR_RETURN(auto in, inputs->Read(size));
    CARTON_ASSIGN_OR_RETURN(auto out, runner_.Infer(in));
    auto written = outputs->Write(out, busy);
    if (!written.ok()) return written.status().WithContext("outputs");
    Json reply = {{"ok", true}, {"size", written->size}};
    if (written->arena >= 0) reply["arena"] = written->arena;
    Status sent = internal::SendMessage(sock, reply.dump(), written->fd);
    if (!sent.ok()) {
      std::fprintf(stderr, "%s serve: %s\n", program_.c_str(), sent.message().c_str());
      std::exit(2);
    }
    return Status::Ok();
  }

  int Run(int argc, char** argv) {
    auto args = Parse(argc, argv);
    if (!args.ok()) return Fail(argc > 1 ? argv[1] : "", args.status());
    const Args& a = *args;
    if (a.command == "info") return Info();
    if (a.command == "self-test") return SelfTest(a);
    if (a.command == "infer") return Infer(a);
    if (a.command == "serve") return Serve(a);
    return Fail(a.command, InvalidArgument("unknown command\n" + Usage()));
  }

 private:
  std::string program_;
  Runner& runner_;
  std::unique_ptr<loader::LoadedCarton> loaded_;  // what LoadContext::carton points to
};

}  // namespace

const loader::Device& RunnerDevice() { return CurrentDevice(); }

RunnerOpt ParseRunnerOpt(std::string_view text) {
  std::string s(text);
  if (s == "true") return true;
  if (s == "false") return false;
  char* end = nullptr;
  errno = 0;
  long long i = std::strtoll(s.c_str(), &end, 10);
  if (!s.empty() && *end == '\0' && errno == 0) return static_cast<std::int64_t>(i);
  double d = std::strtod(s.c_str(), &end);
  if (!s.empty() && *end == '\0') return d;
  return s;
}

int RunnerMain(int argc, char** argv, Runner& runner) {
  std::string program = argc > 0 ? std::filesystem::path(argv[0]).filename().string() : "runner";
  Main m(program, runner);
  return m.Run(argc, argv);
}

}  // namespace carton::runner
