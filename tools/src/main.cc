// The `carton` command line: parses arguments with CLI11 and calls the
// command functions in commands.h. The only file that includes CLI11.
//
// Beyond CLI11: bare `carton` (and a command group without its
// subcommand) prints the help and exits 0, as cargo and docker do; an
// unknown command is refused with the nearest known name; `carton help
// [COMMAND [SUB]]` is COMMAND's --help; every --help ends with examples,
// the environment variables the command reads and the exit codes, from the
// table in help.cc.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <functional>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "carton/common/temporaries.h"
#include "commands.h"
#include "exit_code.h"
#include "help.h"
#include "json_out.h"

namespace carton::cli {
namespace {

// The path of `cmd` below the top ("cache gc").
std::string CommandPath(const CLI::App* cmd) {
  std::string path;
  for (const CLI::App* c = cmd; c != nullptr && c->get_parent() != nullptr; c = c->get_parent()) {
    path = path.empty() ? c->get_name() : c->get_name() + " " + path;
  }
  return path;
}

void AddFooters(CLI::App* app) {
  for (CLI::App* sub : app->get_subcommands([](CLI::App*) { return true; })) {
    const std::string path = CommandPath(sub);
    const bool json = sub->get_option_no_throw("--json") != nullptr;
    if (std::string footer = HelpFooter(path, json); !footer.empty()) sub->footer(footer);
    AddFooters(sub);
  }
}

std::vector<CLI::App*> Subcommands(CLI::App* app) {
  return app->get_subcommands([](CLI::App*) { return true; });
}

CLI::App* FindSubcommand(CLI::App* app, const std::string& name) {
  for (CLI::App* sub : Subcommands(app)) {
    if (sub->check_name(name)) return sub;
  }
  return nullptr;
}

bool WantsJson(const std::vector<std::string>& args) {
  return std::find(args.begin(), args.end(), "--json") != args.end();
}

// A usage error, ours or CLI11's: "<prefix>: <message>" and `hint` on
// stderr, and with --json among `args` the error document on stdout. Exit 2.
int UsageError(const std::string& prefix, const std::string& message, const std::string& hint,
               const std::vector<std::string>& args) {
  std::cerr << prefix << ": " << message << "\n" << hint;
  if (WantsJson(args)) {
    Json j = JsonDocument();
    j["ok"] = false;
    j["error"] = ErrorJson(InvalidArgument(message));
    PrintJson(j);
  }
  return kExitTrouble;
}

// "carton: unknown command 'packk' (did you mean 'pack'?)", exit 2.
int UnknownCommand(CLI::App* parent, const std::string& name,
                   const std::vector<std::string>& args) {
  std::string best;
  std::size_t best_distance = 0;
  for (CLI::App* sub : Subcommands(parent)) {
    const std::size_t d = EditDistance(name, sub->get_name());
    if (best.empty() || d < best_distance) {
      best = sub->get_name();
      best_distance = d;
    }
  }
  const std::string where = CommandPath(parent);
  const std::string prefix = "carton" + (where.empty() ? "" : " " + where);
  std::string message = "unknown command '" + name + "'";
  // Close enough to be a typo: a third of the name, at least one edit.
  if (!best.empty() && best_distance <= std::max<std::size_t>(1, name.size() / 3)) {
    message += " (did you mean '" + best + "'?)";
  }
  return UsageError(prefix, message, "Run '" + prefix + " --help' for the list of commands.\n",
                    args);
}

// Walks the command words of `args` (after "carton"): checks each names a
// known command, rewrites `help A B` into `A B --help`, and finds a bare
// group. Returns an exit code to stop with, or -1 to go on and parse.
int Preflight(CLI::App* app, std::vector<std::string>* args) {
  const auto is_help = [](const std::string& a) { return a == "-h" || a == "--help"; };
  const bool help_words =
      !args->empty() && (*args)[0] == "help" && std::none_of(args->begin(), args->end(), is_help);
  if (help_words) {
    args->erase(args->begin());
    for (const auto& a : *args) {
      if (!a.empty() && a[0] == '-') {
        return UsageError("carton help", "takes command names only, not '" + a + "'", "", *args);
      }
    }
    args->push_back("--help");
  }
  CLI::App* at = app;
  for (std::size_t i = 0; i < args->size(); ++i) {
    const std::string& a = (*args)[i];
    if (a == "--") break;
    if (!a.empty() && a[0] == '-') {
      // Options of a group ("--help") are CLI11's business; a group has no
      // option that takes a value, so the next word is still a command.
      if (Subcommands(at).empty()) break;
      continue;
    }
    if (Subcommands(at).empty()) {
      if (help_words) {
        return UsageError("carton help", "'" + CommandPath(at) + "' has no command '" + a + "'", "",
                          *args);
      }
      break;
    }
    CLI::App* sub = FindSubcommand(at, a);
    if (sub == nullptr) return UnknownCommand(at, a, *args);
    at = sub;
  }
  if (!Subcommands(at).empty()) {
    // A bare group, or bare `carton`: its help (unless something else,
    // such as --version or --help, was asked for).
    const bool other = std::any_of(args->begin(), args->end(),
                                   [](const std::string& a) { return !a.empty() && a[0] == '-'; });
    if (!other) {
      const std::string parent = at == app ? "" : CommandPath(at->get_parent());
      std::cout << at->help(at == app ? "" : parent.empty() ? "carton" : "carton " + parent);
      return kExitOk;
    }
  }
  return -1;
}

// ---------------------------------------------------------------------------
// The commands. Each Add* function adds one command (or group) to `parent`:
// its options, bound to arguments it owns, and its callback. The table
// kCommands lists them in the order `carton --help` shows them.

// Sets the exit code of the command that ran; its --json decides where
// errors go too.
struct RunState {
  int rc = kExitOk;
};

void OnRun(RunState* state, CLI::App* cmd, std::function<int()> fn) {
  cmd->callback([state, cmd, fn = std::move(fn)] {
    const CLI::Option* json = cmd->get_option_no_throw("--json");
    SetJsonErrors(json != nullptr && json->count() > 0);
    state->rc = fn();
  });
}

// A command's arguments live as long as the callback that reads them.
template <typename Args>
std::shared_ptr<Args> Bind() {
  return std::make_shared<Args>();
}

constexpr const char* kModelAnywhere = "A .carton file, an http(s) URL or an oci:// reference";

// -j,--threads,--jobs N: one value, the work done at once; `what` says
// which (threads, blobs moved). --jobs is the older spelling for blobs.
CLI::Option* AddThreads(CLI::App* cmd, unsigned* n, const std::string& what) {
  return cmd->add_option("-j,--threads,--jobs", *n, what);
}

// --registry-config, --plain-http and, with `jobs`, -j,--threads,--jobs
// (blobs moved at once): for commands that take oci:// references. A
// command with threads of its own passes `jobs` false and calls
// SetRegistryJobs.
void AddRegistryOptions(CLI::App* cmd, EnvironmentArgs* r, bool jobs = true) {
  cmd->add_option("--registry-config", r->registry_config,
                  "Registry credentials in the ~/.docker/config.json format (default: "
                  "$CARTON_REGISTRY_AUTH, then ~/.docker/config.json)");
  cmd->add_flag("--plain-http", r->plain_http,
                "Talk plain HTTP to a registry that is not on a loopback address");
  if (jobs) {
    AddThreads(cmd, &r->jobs, "Blobs moved at once, for oci:// references")->capture_default_str();
  }
}

// A command's -j value, when given, is also its blobs moved at once (0,
// one thread per core, leaves the registry default).
void SetRegistryJobs(EnvironmentArgs* r) {
  if (r->threads > 0) r->jobs = r->threads;
}

// -q,--quiet, bound to `quiet`: what it silences is `what`.
void AddQuiet(CLI::App* cmd, bool* quiet, const std::string& what) {
  cmd->add_flag("-q,--quiet", *quiet, what);
}

// -q,--quiet for a command that prints nothing but its requested output
// and errors: accepted and ignored, so that scripts may pass -q to every
// command.
void AcceptQuiet(CLI::App* cmd) {
  cmd->add_flag("-q,--quiet")
      ->description("Accepted for scripts (this command prints only its output and errors)");
}

void AddAllowFileLinks(CLI::App* cmd, bool* allow) {
  cmd->add_flag("--allow-file-links", *allow, "Let LINKS use file:// URLs (refused by default)");
}

// The flags that describe a model: pack (without carton.toml, or with
// --override) and init.
void AddDescribeOptions(CLI::App* cmd, DescribeArgs* d) {
  cmd->add_option("--runner", d->runner, "The runner name (torchscript, python, ...)");
  cmd->add_option("--framework-version", d->framework_version,
                  "The required framework version, a semver requirement (=1.13.1, >=2.0)");
  cmd->add_option("--compat-version", d->compat_version, "The runner compat version (default 1)");
  cmd->add_option("--name", d->name, "The model name");
  cmd->add_option("--description", d->description, "A short description");
  cmd->add_option("--license", d->license, "The license (an SPDX expression)");
  // One value per occurrence, so that PATH after them stays PATH.
  cmd->add_option("--opt", d->opts, "KEY=VALUE, a [runner.opts] value (typed as runners' --opt)")
      ->allow_extra_args(false);
  cmd->add_option("--input", d->inputs,
                  "NAME:DTYPE[:SHAPE], an [[input]]; SHAPE is [d,...] (ints, symbols, *), * or "
                  "a symbol; repeatable, in order")
      ->allow_extra_args(false);
  cmd->add_option("--output-tensor", d->outputs,
                  "NAME:DTYPE[:SHAPE], an [[output]] (-o/--output names the .carton); "
                  "repeatable, in order")
      ->allow_extra_args(false);
  cmd->add_option("--self-test", d->self_tests,
                  "IN=TENSOR,...[:OUT=TENSOR,...], a [[self_test]] naming tensor_data tensors; "
                  "repeatable")
      ->allow_extra_args(false);
}

void AddSafetensors(CLI::App* app, RunState* state) {
  auto* st = app->add_subcommand(
      "safetensors",
      "Inspect, verify and extract from safetensors files, local or by http(s) URL, and sharded "
      "checkpoints (an index .json)");
  st->require_subcommand(1);
  constexpr const char* kStFile =
      "A .safetensors file, an http(s) URL (read by range requests), or a sharded checkpoint's "
      "index (model.safetensors.index.json, local or URL)";

  auto inspect = Bind<SafetensorsInspectArgs>();
  auto* in = st->add_subcommand("inspect", "List the tensors and metadata of a file");
  in->add_option("FILE", inspect->file, kStFile)->required();
  in->add_flag("--json", inspect->json, "Print JSON");
  AcceptQuiet(in);
  OnRun(state, in, [inspect] { return SafetensorsInspect(*inspect); });

  auto verify = Bind<SafetensorsVerifyArgs>();
  auto* v = st->add_subcommand(
      "verify", "Check files against every rule of the format (exit 1 if any is invalid)");
  v->add_option("FILE", verify->files, kStFile)->required();
  v->add_flag("--json", verify->json, "Print a JSON report");
  v->add_flag("-q,--quiet", verify->quiet, "Print only errors");
  OnRun(state, v, [verify] { return SafetensorsVerify(*verify); });

  auto get = Bind<SafetensorsGetArgs>();
  auto* g = st->add_subcommand(
      "get", "Write some tensors of a file to a new .safetensors file, reading only their bytes");
  g->add_option("FILE", get->file, kStFile)->required();
  g->add_option("TENSOR", get->tensors, "Tensor names")->required();
  g->add_option("-o,--output", get->output, "The .safetensors file to write")->required();
  g->add_flag("--json", get->json, "Print JSON: the file written and its tensors");
  AcceptQuiet(g);
  OnRun(state, g, [get] { return SafetensorsGet(*get); });
}

void AddPack(CLI::App* app, RunState* state) {
  auto pack = Bind<PackArgs>();
  auto* p = app->add_subcommand(
      "pack", "Pack a model folder (with or without carton.toml) or a single file into a .carton");
  p->add_option("PATH", pack->dir,
                "A folder with model/ (and carton.toml, tensor_data/, misc/); any other folder, "
                "whose files go under model/ (carton.toml aside); or one file, packed as "
                "model/<name>")
      ->required();
  p->add_option("-o,--output", pack->output, "The .carton to write")->required();
  p->add_option("--compression", pack->compression,
                "stored, deflate, zstd, or auto (zstd where it pays; files under 4 KiB, files "
                "zstd does not shrink by 10% and files of 16 MiB or more stored, so they stay "
                "mappable); deflate for recipients "
                "whose zip tools lack zstd")
      ->capture_default_str();
  p->add_option("--level", pack->level, "Compression level (0: the method's default)");
  p->add_option("--align", pack->align, "Alignment of stored entries' data (64; 4096 for pages)")
      ->capture_default_str();
  AddThreads(p, &pack->threads,
             "Threads for hashing and zstd (0: one per core); the output is the same for any");
  AddDescribeOptions(p, &pack->describe);
  p->get_option("--self-test")
      ->description(
          "IN.safetensors[:OUT.safetensors]: a [[self_test]] added to the carton (not to PATH) "
          "whose inputs are IN's tensors, each named as its input, and expected_out OUT's; or "
          "IN=TENSOR,...[:OUT=TENSOR,...], one naming tensor_data tensors (these replace "
          "carton.toml's, with --override); repeatable");
  p->add_flag("--override", pack->override_config,
              "Put the describing flags over carton.toml's values (else they are refused when "
              "PATH has carton.toml)");
  p->add_option("--exclude", pack->exclude,
                "GLOB of files or directories to leave out (repeatable; also PATH/.cartonignore, "
                "one per line); .git/, __pycache__/, .DS_Store always are")
      ->allow_extra_args(false);
  p->add_flag("--json", pack->json, "Print a JSON report instead of the manifest hash");
  p->add_flag("-q,--quiet", pack->quiet,
              "No summary or progress on stderr (warnings and notes stay)");
  OnRun(state, p, [pack, p] {
    pack->describe.compat_given = p->count("--compat-version") > 0;
    return Pack(*pack);
  });
}

void AddInit(CLI::App* app, RunState* state) {
  auto init = Bind<InitArgs>();
  auto* in = app->add_subcommand(
      "init", "Write DIR/carton.toml, commented, from the flags or guessed from DIR's files");
  in->add_option("DIR", init->dir, "The model folder (created if missing)")->required();
  AddDescribeOptions(in, &init->describe);
  in->add_flag("--json", init->json, "Print JSON: the carton.toml written and the notes");
  AddQuiet(in, &init->quiet, "No \"wrote\" line on stderr (notes stay)");
  OnRun(state, in, [init, in] {
    init->describe.compat_given = in->count("--compat-version") > 0;
    return Init(*init);
  });
}

void AddVerify(CLI::App* app, RunState* state) {
  auto verify = Bind<VerifyArgs>();
  auto* v = app->add_subcommand("verify", "Check a .carton: structure, metadata, every hash");
  v->add_option("MODEL", verify->cartons,
                "A .carton file, an http(s) URL or an oci:// reference (several: each is checked)")
      ->required();
  v->add_flag("--json", verify->json, "Print a JSON report");
  v->add_flag("--fetch", verify->fetch,
              "Also fetch linked files (LINKS) through the blob cache and hash them");
  AddAllowFileLinks(v, &verify->env.allow_file_links);
  AddThreads(v, &verify->env.threads,
             "Hashing threads, and blobs moved at once for oci:// references (0: one thread per "
             "core, 4 blobs)");
  AddRegistryOptions(v, &verify->env, /*jobs=*/false);
  v->add_flag("-q,--quiet", verify->quiet, "Draw no progress line");
  v->add_option("--key", verify->keys,
                "A trusted public key (PEM): check the signature too; repeatable")
      ->allow_extra_args(false);
  v->add_option("--ca", verify->cas,
                "Trusted CA roots (PEM): check a certificate signature's chain; repeatable")
      ->allow_extra_args(false);
  v->add_option("--identity", verify->identities,
                "With --ca: the leaf certificate must name this (an email, URI or DNS name, or "
                "its subject); repeatable, any one suffices")
      ->allow_extra_args(false);
  v->add_option("--signature", verify->signature,
                "The signature (default: MODEL.carton.sig beside it, DIR/model.sig, or an "
                "oci:// reference's referrer)");
  v->get_option("MODEL")->description(
      "A .carton file, an http(s) URL or an oci:// reference (several: each is checked); "
      "with --key or --ca also any directory of files (its signature DIR/model.sig)");
  OnRun(state, v, [verify] {
    SetRegistryJobs(&verify->env);
    return Verify(*verify);
  });
}

void AddKeygen(CLI::App* app, RunState* state) {
  auto keygen = Bind<KeygenArgs>();
  auto* c = app->add_subcommand(
      "keygen",
      "Make an ECDSA key pair for signing: the private key (mode 0600) and its public key");
  c->add_option("-o,--output", keygen->output, "The private key file to write (never replaced)")
      ->required();
  c->add_option("--public", keygen->public_output,
                "The public key file (default: the output with .pem or .key made .pub)");
  c->add_option("--curve", keygen->curve, "p256, p384 or p521")->capture_default_str();
  c->add_flag("--encrypt", keygen->encrypt,
              "Encrypt the private key with a passphrase (CARTON_KEY_PASSPHRASE, else asked "
              "twice on the terminal)");
  c->add_flag("--json", keygen->json, "Print JSON: the files written and the key's hint");
  AcceptQuiet(c);
  OnRun(state, c, [keygen] { return Keygen(*keygen); });
}

void AddSign(CLI::App* app, RunState* state) {
  auto sign = Bind<SignArgs>();
  auto* c = app->add_subcommand(
      "sign",
      "Sign a carton (an OpenSSF Model Signing bundle of MANIFEST's files) with a key, or a "
      "certificate and its chain");
  c->add_option("MODEL", sign->carton,
                "A .carton file or an http(s) URL, or an unpacked carton directory")
      ->required();
  c->add_option("--key", sign->key, "The private key (PEM; readable by its owner only)")
      ->required();
  c->add_option("--cert", sign->cert,
                "The signing certificate (PEM) of the key: the certificate method");
  c->add_option("--chain", sign->chain, "With --cert: the intermediate certificates (PEM)");
  c->add_option("-o,--output", sign->output,
                "The signature to write (default MODEL.carton.sig, or DIR/model.sig)");
  AddThreads(c, &sign->env.threads, "Threads for the check before signing (0: one per core)");
  AddRegistryOptions(c, &sign->env, /*jobs=*/false);
  c->add_flag("--json", sign->json, "Print JSON: the signature written and the signer");
  AddQuiet(c, &sign->quiet, "No summary on stderr");
  OnRun(state, c, [sign] { return Sign(*sign); });
}

void AddInfo(CLI::App* app, RunState* state) {
  auto info = Bind<InfoArgs>();
  auto* i = app->add_subcommand(
      "info", "Show a .carton's metadata without unpacking it (a URL costs a few range requests)");
  i->add_option("MODEL", info->cartons,
                "A .carton file, an http(s) URL or an oci:// reference (several: each is shown)")
      ->required();
  i->add_flag("--json", info->json, "Print JSON");
  AddRegistryOptions(i, &info->env);
  AcceptQuiet(i);
  OnRun(state, i, [info] { return Info(*info); });
}

void AddUnpack(CLI::App* app, RunState* state) {
  auto unpack = Bind<UnpackArgs>();
  auto* u = app->add_subcommand(
      "unpack", "Extract a .carton into a new directory, fetching linked files, checking hashes");
  u->add_option("MODEL", unpack->carton, kModelAnywhere)->required();
  u->add_option("DIR", unpack->dir,
                "A directory that does not exist or is empty (default: ./<model_name>, else "
                "./<MODEL's file name without extension>)");
  u->add_flag("--json", unpack->json, "Print a JSON report");
  AddAllowFileLinks(u, &unpack->env.allow_file_links);
  AddRegistryOptions(u, &unpack->env);
  u->add_flag("-q,--quiet", unpack->quiet, "No progress line or summary on stderr");
  OnRun(state, u, [unpack] { return Unpack(*unpack); });
}

void AddHash(CLI::App* app, RunState* state) {
  auto hash = Bind<HashArgs>();
  auto* h = app->add_subcommand(
      "hash", "Print a .carton's manifest hash (several MODELs: \"<hash>  <model>\" lines)");
  h->add_option("MODEL", hash->cartons, kModelAnywhere)->required();
  h->add_flag("--json", hash->json, "Print JSON");
  AddRegistryOptions(h, &hash->env);
  AcceptQuiet(h);
  OnRun(state, h, [hash] { return Hash(*hash); });
}

void AddLs(CLI::App* app, RunState* state) {
  auto ls = Bind<LsArgs>();
  auto* c = app->add_subcommand(
      "ls", "List a .carton's files: size, stored size and method, sha256, linked or not");
  c->add_option("MODEL", ls->carton, kModelAnywhere)->required();
  c->add_flag("--json", ls->json, "Print JSON");
  AddRegistryOptions(c, &ls->env);
  AcceptQuiet(c);
  OnRun(state, c, [ls] { return Ls(*ls); });
}

void AddCat(CLI::App* app, RunState* state) {
  auto cat = Bind<CatArgs>();
  auto* c = app->add_subcommand(
      "cat", "Write one file of a .carton to stdout, its sha256 checked against MANIFEST");
  c->add_option("MODEL", cat->carton, kModelAnywhere)->required();
  c->add_option("PATH", cat->path, "The file, as MANIFEST names it (e.g. carton.toml)")->required();
  AddAllowFileLinks(c, &cat->env.allow_file_links);
  AddRegistryOptions(c, &cat->env);
  AcceptQuiet(c);
  OnRun(state, c, [cat] { return Cat(*cat); });
}

void AddDiff(CLI::App* app, RunState* state) {
  auto diff = Bind<DiffArgs>();
  auto* c = app->add_subcommand(
      "diff",
      "Compare two cartons by MANIFEST: files added, removed and changed (exit 0 either way)");
  c->add_option("A", diff->a, kModelAnywhere)->required();
  c->add_option("B", diff->b, kModelAnywhere)->required();
  c->add_flag("--json", diff->json, "Print JSON");
  AddRegistryOptions(c, &diff->env);
  AcceptQuiet(c);
  OnRun(state, c, [diff] { return Diff(*diff); });
}

void AddPush(CLI::App* app, RunState* state) {
  auto push = Bind<PushArgs>();
  auto* c = app->add_subcommand(
      "push", "Push a .carton to an OCI registry (one blob per file; only missing blobs move)");
  c->add_option("MODEL", push->carton, "A .carton file or an http(s) URL")->required();
  c->add_option("REFERENCE", push->reference, "oci://HOST[:PORT]/REPOSITORY[:TAG]")->required();
  c->add_flag("-q,--quiet", push->quiet, "No summary or progress on stderr");
  c->add_flag("--json", push->json, "Print a JSON report (each blob and what happened to it)");
  c->add_option("--format", push->format,
                "The artifact's form: carton (default) or modelpack (a CNCF ModelPack; the same "
                "file blobs)")
      ->check(CLI::IsMember({"carton", "modelpack"}));
  AddRegistryOptions(c, &push->env);
  OnRun(state, c, [push] { return Push(*push); });
}

void AddPull(CLI::App* app, RunState* state) {
  auto pull = Bind<PullArgs>();
  auto* c = app->add_subcommand(
      "pull",
      "Pull a carton from an OCI registry, byte for byte the one pushed (a ModelPack another "
      "tool wrote is imported: its files under model/)");
  c->add_option("REFERENCE", pull->reference, "oci://HOST[:PORT]/REPOSITORY[:TAG|@sha256:DIGEST]")
      ->required();
  c->add_option("-o,--output", pull->output, "The .carton to write")->required();
  c->add_flag("-q,--quiet", pull->quiet, "No summary or progress on stderr");
  c->add_flag("--json", pull->json, "Print a JSON report");
  c->add_flag("--cache", pull->cache,
              "Also keep large stored files' blobs in the blob cache (they are then written "
              "twice: to the cache and into the carton)");
  AddRegistryOptions(c, &pull->env);
  OnRun(state, c, [pull] { return Pull(*pull); });
}

void AddShrink(CLI::App* app, RunState* state) {
  auto shrink = Bind<ShrinkArgs>();
  auto* c = app->add_subcommand(
      "shrink",
      "Move large files out of a .carton into LINKS (URL-PREFIX/<sha256>); the manifest hash "
      "stays the same");
  c->add_option("MODEL", shrink->carton, kModelAnywhere)->required();
  c->add_option("-o,--output", shrink->output, "The .carton to write")->required();
  c->add_option("--url-prefix", shrink->url_prefix,
                "Where the blobs will be served: each file gets URL-PREFIX/<sha256>")
      ->required();
  c->add_option("--blobs", shrink->blobs_dir,
                "Directory to write the blobs to (named <sha256>), for upload to URL-PREFIX")
      ->required();
  c->add_flag("--json", shrink->json, "Print a JSON report");
  c->add_option("--min-size", shrink->min_size, "Files of at least this many bytes leave the zip")
      ->capture_default_str();
  c->add_option("--encodings", shrink->encodings,
                "Also write pre-compressed copies: zstd (.zst), br (.br), gzip (.gz)")
      ->delimiter(',');
  AddRegistryOptions(c, &shrink->env);
  c->add_flag("-q,--quiet", shrink->quiet, "No progress line or summary on stderr");
  OnRun(state, c, [shrink] { return Shrink(*shrink); });
}

void AddFetch(CLI::App* app, RunState* state) {
  auto fetch = Bind<FetchArgs>();
  auto* c = app->add_subcommand(
      "fetch",
      "Write a self-contained .carton: every linked file fetched, verified and put inside");
  c->add_option("MODEL", fetch->carton, kModelAnywhere)->required();
  c->add_option("-o,--output", fetch->output, "The .carton to write")->required();
  c->add_option("--compression", fetch->compression,
                "Method for the fetched files: stored, deflate or zstd")
      ->capture_default_str();
  c->add_flag("--json", fetch->json, "Print a JSON report");
  AddAllowFileLinks(c, &fetch->env.allow_file_links);
  AddRegistryOptions(c, &fetch->env);
  c->add_flag("-q,--quiet", fetch->quiet, "No progress line or summary on stderr");
  OnRun(state, c, [fetch] { return Fetch(*fetch); });
}

void AddTensors(CLI::App* app, RunState* state) {
  auto* t = app->add_subcommand("tensors", "Convert between safetensors and tensor_data folders");
  t->require_subcommand(1);
  auto tensors = Bind<TensorsArgs>();
  auto* ti = t->add_subcommand("import", "Write a tensor_data folder from a safetensors file");
  ti->add_option("FILE", tensors->file, "A .safetensors file")->required();
  ti->add_option("DIR", tensors->dir, "The tensor_data folder to write")->required();
  ti->add_flag("--json", tensors->json, "Print JSON: the file read and the folder written");
  AcceptQuiet(ti);
  OnRun(state, ti, [tensors] { return TensorsImport(*tensors); });
  auto* te = t->add_subcommand("export", "Write a safetensors file from a tensor_data folder");
  te->add_option("DIR", tensors->dir, "A tensor_data folder")->required();
  te->add_option("FILE", tensors->file, "The .safetensors file to write")->required();
  te->add_flag("--json", tensors->json, "Print JSON: the folder read and the file written");
  AcceptQuiet(te);
  OnRun(state, te, [tensors] { return TensorsExport(*tensors); });
}

// --device on every command that loads a model for a runner.
void AddDevice(CLI::App* cmd, std::string* device, const char* what) {
  cmd->add_option("--device", *device,
                  std::string(what) +
                      ": cpu, N or cuda:N (a GPU's index, as `carton devices` lists them), "
                      "GPU-<uuid> or MIG-<uuid> (default: the first GPU when there is one, "
                      "else the CPU)")
      ->type_name("DEVICE")
      ->check(CLI::Validator(
          [](std::string& spec) {
            return spec.empty() ? "an empty device (" + std::string(loader::kDeviceForms) + ")"
                                : CheckDeviceSpec(spec);
          },
          ""));
}

void AddLoad(CLI::App* app, RunState* state) {
  auto load = Bind<LoadArgs>();
  auto* c =
      app->add_subcommand("load", "Load a .carton through the cache; print its model directory");
  c->add_option("MODEL", load->model, "A .carton file, URL, oci:// reference or carton directory")
      ->required();
  c->add_flag("--root", load->root, "Print the entry's root (carton.toml, model/, ...) instead");
  c->add_flag("--verify", load->verify, "Rehash the cached files even on a hit");
  c->add_flag("--json", load->json, "Print JSON: directories, manifest hash, hit or miss, bytes");
  AddThreads(c, &load->env.threads,
             "Threads for hashing and decoding, and blobs moved at once for oci:// references "
             "(0: one thread per core, 4 blobs)");
  AddRegistryOptions(c, &load->env, /*jobs=*/false);
  c->add_flag("-q,--quiet", load->quiet, "Draw no progress line");
  AddDevice(c, &load->device,
            "Check that this device is there and report it with --json (a load starts no "
            "runner)");
  OnRun(state, c, [load] {
    SetRegistryJobs(&load->env);
    return Load(*load);
  });
}

void AddCache(CLI::App* app, RunState* state) {
  auto cache = Bind<CacheArgs>();
  auto* c = app->add_subcommand("cache", "The manifest-hash cache of loaded cartons");
  c->require_subcommand(1);
  auto* cl = c->add_subcommand(
      "list", "List cached cartons, most recently used first, and the blob cache's size");
  cl->alias("ls");
  cl->add_flag("--json", cache->json, "Print JSON");
  AcceptQuiet(cl);
  OnRun(state, cl, [cache] { return CacheList(*cache); });
  auto* cv = c->add_subcommand("verify", "Rehash cached cartons (all, or the given hashes)");
  cv->add_option("HASH", cache->hashes, "Manifest hashes, or unique prefixes of them (4 or more)");
  cv->add_flag("--json", cache->json, "Print JSON");
  cv->add_flag("-q,--quiet", cache->quiet, "Draw no progress line");
  OnRun(state, cv, [cache] { return CacheVerify(*cache); });
  auto* cr = c->add_subcommand("rm", "Remove cached cartons");
  cr->add_option("HASH", cache->hashes, "Manifest hashes, or unique prefixes of them (4 or more)")
      ->required();
  cr->add_flag("--json", cache->json, "Print JSON");
  AddQuiet(cr, &cache->quiet, "No \"removed\" lines on stderr");
  OnRun(state, cr, [cache] { return CacheRemove(*cache); });
  auto* cg = c->add_subcommand(
      "gc",
      "Remove what nothing uses (leftovers, partial downloads, blobs no cached carton links); "
      "with --max-size, also least recently used cartons and blobs down to that size");
  cg->add_option("--max-size", cache->max_size, "e.g. 0, 500M, 20G");
  cg->add_flag("--json", cache->json, "Print JSON");
  AcceptQuiet(cg);
  OnRun(state, cg, [cache] { return CacheGc(*cache); });
}

// MODEL, --timeout and --opt: self-test and infer.
void AddRunOptions(CLI::App* cmd, RunArgs* run) {
  cmd->add_option("MODEL", run->model,
                  "A .carton file, an http(s) URL, an oci:// reference or a carton directory")
      ->required();
  cmd->add_option("--timeout", run->timeout, "Seconds allowed per inference")
      ->capture_default_str();
  cmd->add_option("--opt", run->opts, "KEY=VALUE: override a [runner.opts] value");
  cmd->add_flag("--lenient", run->lenient,
                "Run a carton whose declarations do not hold (inputs that break its [[input]]s, "
                "as some cartons of the original implementation have): warnings, not errors");
  cmd->add_option("--runner", run->runner_name,
                  "Run with the runner of this name instead of carton.toml's (a runner "
                  "override)");
  cmd->add_option("--framework-version", run->framework_version,
                  "Select the runner by this framework version requirement instead of "
                  "carton.toml's (a semver requirement: =1.13.1, >=2.0)");
  AddRegistryOptions(cmd, &run->env, /*jobs=*/false);
  AddDevice(cmd, &run->device,
            "Where the runner runs the model (started with CUDA_VISIBLE_DEVICES naming it "
            "alone)");
}

void AddSelfTest(CLI::App* app, RunState* state) {
  auto run = Bind<RunArgs>();
  auto* c = app->add_subcommand("self-test", "Run a carton's self-tests with its runner");
  AddRunOptions(c, run.get());
  c->add_option("--rtol", run->rtol, "Relative tolerance")->capture_default_str();
  c->add_option("--atol", run->atol, "Absolute tolerance")->capture_default_str();
  c->add_flag("--json", run->json, "Print a JSON report");
  c->add_flag("-q,--quiet", run->quiet, "Draw no progress line while the carton loads");
  OnRun(state, c, [run] { return SelfTest(*run); });
}

void AddInfer(CLI::App* app, RunState* state) {
  auto run = Bind<RunArgs>();
  auto* c = app->add_subcommand(
      "infer",
      "Run a carton on tensors from safetensors files (inputs checked against its [[input]]s "
      "first); each output's name, dtype and shape go to stderr");
  AddRunOptions(c, run.get());
  c->add_option("--input", run->inputs,
                "NAME=FILE.safetensors[:TENSOR], or FILE.safetensors: each of its tensors is the "
                "input of its name");
  c->add_option("-o,--output", run->output, "The .safetensors file to write")->required();
  c->add_flag("-q,--quiet", run->quiet, "No progress line or output summary on stderr");
  c->add_flag("--json", run->json, "Print JSON: the output file and each output's dtype and shape");
  OnRun(state, c, [run] { return Infer(*run); });
}

void AddRunners(CLI::App* app, RunState* state) {
  struct Flags {
    bool json = false;
    bool quiet = false;
  };
  auto flags = Bind<Flags>();
  auto* c = app->add_subcommand("runners", "List the runners found and what they report");
  c->add_flag("--json", flags->json, "Print JSON");
  AddQuiet(c, &flags->quiet, "No note on stderr when no runner is found");
  OnRun(state, c, [flags] { return Runners(flags->json, flags->quiet); });
}

void AddDevices(CLI::App* app, RunState* state) {
  auto json = std::make_shared<bool>(false);
  auto* c = app->add_subcommand(
      "devices",
      "List the GPUs the CUDA driver sees (index, name, UUID, memory): what --device takes");
  c->add_flag("--json", *json, "Print JSON");
  AcceptQuiet(c);
  OnRun(state, c, [json] { return Devices(*json); });
}

void AddVersion(CLI::App* app, RunState* state) {
  auto json = std::make_shared<bool>(false);
  auto* c = app->add_subcommand("version", "Print carton's version");
  c->add_flag("--json", *json, "Print JSON");
  AcceptQuiet(c);
  OnRun(state, c, [json] { return Version(*json); });
}

void AddHelp(CLI::App* app, RunState*) {
  // Only to be listed: Preflight turns `help A B` into `A B --help`.
  app->add_subcommand("help", "Show a command's help: carton help [COMMAND [SUBCOMMAND]]");
}

using AddCommand = void (*)(CLI::App* app, RunState* state);
constexpr AddCommand kCommands[] = {
    AddSafetensors, AddPack,    AddInit,    AddVerify, AddSign,  AddKeygen,   AddInfo,
    AddUnpack,      AddHash,    AddLs,      AddCat,    AddDiff,  AddPush,     AddPull,
    AddShrink,      AddFetch,   AddTensors, AddLoad,   AddCache, AddSelfTest, AddInfer,
    AddRunners,     AddDevices, AddVersion, AddHelp,
};

// " (did you mean '--runner'?)" for each word of `args` that looks like a
// flag of `cmd` misspelt: an unknown "--name" within a third of its length
// of one of cmd's long option names; "" when there is none.
std::string FlagSuggestions(CLI::App* cmd, const std::vector<std::string>& args) {
  std::vector<std::string> known;
  for (const CLI::Option* o : cmd->get_options()) {
    for (const std::string& name : o->get_lnames()) known.push_back("--" + name);
  }
  std::string out;
  for (const std::string& a : args) {
    if (!a.starts_with("--") || a.size() < 4) continue;
    const std::string flag = a.substr(0, a.find('='));
    if (std::find(known.begin(), known.end(), flag) != known.end()) continue;
    std::string best;
    std::size_t best_distance = 0;
    for (const std::string& k : known) {
      const std::size_t d = EditDistance(flag, k);
      if (best.empty() || d < best_distance) {
        best = k;
        best_distance = d;
      }
    }
    if (!best.empty() && best_distance <= std::max<std::size_t>(1, flag.size() / 3)) {
      out += " (" + flag + ": did you mean '" + best + "'?)";
    }
  }
  return out;
}

// Parses `args` (after "carton") and runs the command. Returns the exit code.
int Run(CLI::App* app, std::vector<std::string> args, const RunState& state) {
  if (int stop = Preflight(app, &args); stop >= 0) return stop;
  // CLI11 takes the arguments in reverse order.
  std::vector<std::string> reversed(args.rbegin(), args.rend());
  try {
    app->parse(reversed);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app->exit(e);  // --help, --version
    CLI::App* at = app;
    while (!at->get_subcommands().empty()) at = at->get_subcommands().front();
    const std::string path = CommandPath(at);
    const std::string prefix = "carton" + (path.empty() ? "" : " " + path);
    return UsageError(prefix, e.what() + FlagSuggestions(at, args),
                      "Run '" + prefix + " --help' for more information.\n", args);
  }
  return state.rc;
}

}  // namespace
}  // namespace carton::cli

int main(int argc, char** argv) {
  using namespace carton::cli;
  // SIGINT/SIGTERM remove the command's temporaries, then exit 130/143.
  carton::InstallInterruptCleanup();
  CLI::App app{"carton: pack, verify, inspect and load machine-learning models", "carton"};
  app.set_version_flag("--version", std::string("carton ") + CARTON_VERSION);
  app.require_subcommand(1);
  app.footer(
      "Run 'carton help COMMAND' (or 'carton COMMAND --help') for a command's options, "
      "examples, environment variables and exit codes.\n"
      "Exit status: 0 success; 1 the input is bad (a corrupt or unsupported carton or file, a "
      "failed verification or self-test); 2 usage, environment, I/O, network or runner "
      "trouble; 3 the model's own code failed while infer ran it.");
  RunState state;
  for (AddCommand add : kCommands) add(&app, &state);
  AddFooters(&app);
  return Run(&app, std::vector<std::string>(argv + 1, argv + argc), state);
}
