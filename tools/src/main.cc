// The `carton` command line: parses arguments with CLI11 and calls the
// command functions in commands.h. The only file that includes CLI11.
#include <CLI/CLI.hpp>

#include "carton/common/temporaries.h"
#include "commands.h"
#include "exit_code.h"

int main(int argc, char** argv) {
  using namespace carton::cli;
  // SIGINT/SIGTERM remove the command's temporaries, then exit 130/143.
  carton::InstallInterruptCleanup();
  CLI::App app{"carton: pack, verify, inspect and load machine-learning models", "carton"};
  app.set_version_flag("--version", "carton 0.1.0");
  app.require_subcommand(1);
  int rc = kExitOk;
  // --registry-config, --plain-http, --jobs: for commands that take oci://
  // references.
  auto add_registry_options = [](CLI::App* cmd, RegistryArgs* r, bool jobs = true) {
    cmd->add_option("--registry-config", r->config,
                    "Registry credentials in the ~/.docker/config.json format (default: "
                    "$CARTON_REGISTRY_AUTH, then ~/.docker/config.json)");
    cmd->add_flag("--plain-http", r->plain_http,
                  "Talk plain HTTP to a registry that is not on a loopback address");
    if (jobs) cmd->add_option("--jobs", r->jobs, "Blobs moved at once")->capture_default_str();
  };

  auto* st = app.add_subcommand(
      "safetensors",
      "Inspect, verify and extract from safetensors files, local or by http(s) URL, and sharded "
      "checkpoints (an index .json)");
  st->require_subcommand(1);
  constexpr const char* kStFile =
      "A .safetensors file, an http(s) URL (read by range requests), or a sharded checkpoint's "
      "index (model.safetensors.index.json, local or URL)";

  SafetensorsInspectArgs inspect;
  auto* st_inspect = st->add_subcommand("inspect", "List the tensors and metadata of a file");
  st_inspect->add_option("FILE", inspect.file, kStFile)->required();
  st_inspect->add_flag("--json", inspect.json, "Print JSON");
  st_inspect->callback([&] { rc = SafetensorsInspect(inspect); });

  SafetensorsVerifyArgs verify;
  auto* st_verify = st->add_subcommand(
      "verify", "Check files against every rule of the format (exit 1 if any is invalid)");
  st_verify->add_option("FILE", verify.files, kStFile)->required();
  st_verify->add_flag("--json", verify.json, "Print a JSON report");
  st_verify->add_flag("-q,--quiet", verify.quiet, "Print only errors");
  st_verify->callback([&] { rc = SafetensorsVerify(verify); });

  SafetensorsGetArgs get;
  auto* st_get = st->add_subcommand(
      "get", "Write some tensors of a file to a new .safetensors file, reading only their bytes");
  st_get->add_option("FILE", get.file, kStFile)->required();
  st_get->add_option("TENSOR", get.tensors, "Tensor names")->required();
  st_get->add_option("-o,--output", get.output, "The .safetensors file to write")->required();
  st_get->callback([&] { rc = SafetensorsGet(get); });

  PackArgs pack;
  auto* p = app.add_subcommand("pack", "Pack a model directory into a .carton");
  p->add_option("DIR", pack.dir, "Directory with carton.toml, model/, tensor_data/, misc/")
      ->required();
  p->add_option("-o,--output", pack.output, "The .carton to write")->required();
  p->add_option("--compression", pack.compression,
                "stored, deflate, zstd, or auto (zstd where it pays; large files stored)")
      ->capture_default_str();
  p->add_option("--level", pack.level, "Compression level (0: the method's default)");
  p->add_option("--align", pack.align, "Alignment of stored entries' data (64; 4096 for pages)")
      ->capture_default_str();
  p->add_option("--threads", pack.threads,
                "Threads for hashing and zstd (0: one per core); the output is the same for any");
  p->add_option("--runner", pack.runner, "Without carton.toml: the runner name");
  p->add_option("--framework-version", pack.framework_version,
                "Without carton.toml: the required framework version (semver requirement)");
  p->add_option("--compat-version", pack.compat_version,
                "Without carton.toml: the runner compat version")
      ->capture_default_str();
  p->add_option("--name", pack.name, "Without carton.toml: the model name");
  p->add_option("--description", pack.description, "Without carton.toml: a short description");
  p->add_option("--license", pack.license, "Without carton.toml: the license");
  p->add_option("--opt", pack.opts,
                "Without carton.toml: KEY=VALUE, a [runner.opts] value (typed as runners' --opt)");
  p->add_flag("-q,--quiet", pack.quiet, "Draw no progress line");
  p->callback([&] { rc = Pack(pack); });

  VerifyArgs verify_carton;
  auto* v = app.add_subcommand("verify", "Check a .carton: structure, metadata, every hash");
  v->add_option("MODEL", verify_carton.carton,
                "A .carton file, an http(s) URL or an oci:// reference")
      ->required();
  v->add_flag("--json", verify_carton.json, "Print a JSON report");
  v->add_flag("--fetch", verify_carton.fetch,
              "Also fetch linked files (LINKS) through the blob cache and hash them");
  v->add_flag("--allow-file-links", verify_carton.allow_file_links,
              "Let LINKS use file:// URLs (refused by default)");
  v->add_option("-j,--threads", verify_carton.threads, "Hashing threads (0: one per core)");
  add_registry_options(v, &verify_carton.registry);
  v->add_flag("-q,--quiet", verify_carton.quiet, "Draw no progress line");
  v->callback([&] { rc = Verify(verify_carton); });

  InfoArgs info;
  auto* i = app.add_subcommand(
      "info", "Show a .carton's metadata without unpacking it (a URL costs a few range requests)");
  i->add_option("MODEL", info.carton, "A .carton file, an http(s) URL or an oci:// reference")
      ->required();
  i->add_flag("--json", info.json, "Print JSON");
  add_registry_options(i, &info.registry);
  i->callback([&] { rc = Info(info); });

  UnpackArgs unpack;
  auto* u = app.add_subcommand(
      "unpack", "Extract a .carton into a new directory, fetching linked files, checking hashes");
  u->add_option("MODEL", unpack.carton, "A .carton file or an http(s) URL")->required();
  u->add_option("DIR", unpack.dir, "A directory that does not exist or is empty")->required();
  u->add_flag("--allow-file-links", unpack.allow_file_links,
              "Let LINKS use file:// URLs (refused by default)");
  u->add_flag("-q,--quiet", unpack.quiet, "Draw no progress line");
  u->callback([&] { rc = Unpack(unpack); });

  std::string hash_carton;
  RegistryArgs hash_registry;
  auto* h = app.add_subcommand("hash", "Print a .carton's manifest hash");
  h->add_option("MODEL", hash_carton, "A .carton file, an http(s) URL or an oci:// reference")
      ->required();
  add_registry_options(h, &hash_registry);
  h->callback([&] { rc = Hash(hash_carton, hash_registry); });

  PushArgs push;
  auto* ps = app.add_subcommand(
      "push", "Push a .carton to an OCI registry (one blob per file; only missing blobs move)");
  ps->add_option("MODEL", push.carton, "A .carton file or an http(s) URL")->required();
  ps->add_option("REFERENCE", push.reference, "oci://HOST[:PORT]/REPOSITORY[:TAG]")->required();
  ps->add_flag("--json", push.json, "Print a JSON report (each blob and what happened to it)");
  add_registry_options(ps, &push.registry);
  ps->callback([&] { rc = Push(push); });

  PullArgs pull;
  auto* pl = app.add_subcommand("pull",
                                "Pull a carton from an OCI registry, byte for byte the one pushed");
  pl->add_option("REFERENCE", pull.reference, "oci://HOST[:PORT]/REPOSITORY[:TAG|@sha256:DIGEST]")
      ->required();
  pl->add_option("-o,--output", pull.output, "The .carton to write")->required();
  pl->add_flag("--json", pull.json, "Print a JSON report");
  add_registry_options(pl, &pull.registry);
  pl->callback([&] { rc = Pull(pull); });

  ShrinkArgs shrink;
  auto* sh = app.add_subcommand(
      "shrink",
      "Move large files out of a .carton into LINKS (URL-PREFIX/<sha256>); the manifest hash "
      "stays the same");
  sh->add_option("MODEL", shrink.carton, "A .carton file or an http(s) URL")->required();
  sh->add_option("-o,--output", shrink.output, "The .carton to write")->required();
  sh->add_option("--url-prefix", shrink.url_prefix,
                 "Where the blobs will be served: each file gets URL-PREFIX/<sha256>")
      ->required();
  sh->add_option("--blobs", shrink.blobs_dir,
                 "Directory to write the blobs to (named <sha256>), for upload to URL-PREFIX")
      ->required();
  sh->add_option("--min-size", shrink.min_size, "Files of at least this many bytes leave the zip")
      ->capture_default_str();
  sh->add_option("--encodings", shrink.encodings,
                 "Also write pre-compressed copies: zstd (.zst), br (.br), gzip (.gz)")
      ->delimiter(',');
  sh->add_flag("-q,--quiet", shrink.quiet, "Draw no progress line");
  sh->callback([&] { rc = Shrink(shrink); });

  FetchArgs fetch;
  auto* f = app.add_subcommand(
      "fetch",
      "Write a self-contained .carton: every linked file fetched, verified and put inside");
  f->add_option("MODEL", fetch.carton, "A .carton file or an http(s) URL")->required();
  f->add_option("-o,--output", fetch.output, "The .carton to write")->required();
  f->add_option("--compression", fetch.compression,
                "Method for the fetched files: stored, deflate or zstd")
      ->capture_default_str();
  f->add_flag("--allow-file-links", fetch.allow_file_links,
              "Let LINKS use file:// URLs (refused by default)");
  f->add_flag("-q,--quiet", fetch.quiet, "Draw no progress line");
  f->callback([&] { rc = Fetch(fetch); });

  auto* t = app.add_subcommand("tensors", "Convert between safetensors and tensor_data folders");
  t->require_subcommand(1);
  std::string t_file, t_dir;
  auto* ti = t->add_subcommand("import", "Write a tensor_data folder from a safetensors file");
  ti->add_option("FILE", t_file, "A .safetensors file")->required();
  ti->add_option("DIR", t_dir, "The tensor_data folder to write")->required();
  ti->callback([&] { rc = TensorsImport(t_file, t_dir); });
  auto* te = t->add_subcommand("export", "Write a safetensors file from a tensor_data folder");
  te->add_option("DIR", t_dir, "A tensor_data folder")->required();
  te->add_option("FILE", t_file, "The .safetensors file to write")->required();
  te->callback([&] { rc = TensorsExport(t_dir, t_file); });

  // Loader, cache and runners (loader_cmd.cc).
  LoadArgs load;
  auto* l =
      app.add_subcommand("load", "Load a .carton through the cache; print its model directory");
  l->add_option("MODEL", load.model, "A .carton file, URL, oci:// reference or carton directory")
      ->required();
  l->add_flag("--root", load.root, "Print the entry's root (carton.toml, model/, ...) instead");
  l->add_flag("--verify", load.verify, "Rehash the cached files even on a hit");
  l->add_flag("--json", load.json, "Print JSON: directories, manifest hash, hit or miss, bytes");
  add_registry_options(l, &load.registry, /*jobs=*/false);
  l->add_flag("-q,--quiet", load.quiet, "Draw no progress line");
  l->callback([&] { rc = Load(load); });

  CacheArgs cache;
  auto* c = app.add_subcommand("cache", "The manifest-hash cache of loaded cartons");
  c->require_subcommand(1);
  auto* cl = c->add_subcommand(
      "list", "List cached cartons, most recently used first, and the blob cache's size");
  cl->add_flag("--json", cache.json, "Print JSON");
  cl->callback([&] { rc = CacheList(cache); });
  auto* cv = c->add_subcommand("verify", "Rehash cached cartons (all, or the given hashes)");
  cv->add_option("HASH", cache.hashes, "Manifest hashes");
  cv->add_flag("--json", cache.json, "Print JSON");
  cv->add_flag("-q,--quiet", cache.quiet, "Draw no progress line");
  cv->callback([&] { rc = CacheVerify(cache); });
  auto* cr = c->add_subcommand("rm", "Remove cached cartons");
  cr->add_option("HASH", cache.hashes, "Manifest hashes")->required();
  cr->callback([&] { rc = CacheRemove(cache); });
  auto* cg =
      c->add_subcommand("gc", "Remove least recently used cartons and LINKS blobs down to a size");
  cg->add_option("--max-size", cache.max_size, "e.g. 0, 500M, 20G")->required();
  cg->callback([&] { rc = CacheGc(cache); });

  RunArgs run;
  auto add_run_options = [&](CLI::App* cmd) {
    cmd->add_option("MODEL", run.model, "A .carton file, URL or carton directory")->required();
    cmd->add_option("--timeout", run.timeout, "Seconds allowed per inference")
        ->capture_default_str();
    cmd->add_option("--opt", run.opts, "KEY=VALUE: override a [runner.opts] value");
  };
  auto* stc = app.add_subcommand("self-test", "Run a carton's self-tests with its runner");
  add_run_options(stc);
  stc->add_option("--rtol", run.rtol, "Relative tolerance")->capture_default_str();
  stc->add_option("--atol", run.atol, "Absolute tolerance")->capture_default_str();
  stc->add_flag("--json", run.json, "Print a JSON report");
  stc->callback([&] { rc = SelfTest(run); });
  auto* inf = app.add_subcommand("infer", "Run a carton on tensors from safetensors files");
  add_run_options(inf);
  inf->add_option("--input", run.inputs, "NAME=FILE.safetensors[:TENSOR]");
  inf->add_option("--output", run.output, "The .safetensors file to write")->required();
  inf->callback([&] { rc = Infer(run); });
  bool runners_json = false;
  auto* rn = app.add_subcommand("runners", "List the runners found and what they report");
  rn->add_flag("--json", runners_json, "Print JSON");
  rn->callback([&] { rc = Runners(runners_json); });

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? kExitOk : kExitTrouble;
  }
  return rc;
}
