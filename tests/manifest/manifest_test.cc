#include "carton/manifest/manifest.h"

#include <catch2/catch.hpp>
#include <string>

#include "testing.h"

using namespace carton;
using namespace carton::manifest;

namespace {

const std::string kHashA(64, 'a');
const std::string kHashB(64, 'b');

std::string Line(std::string_view path, std::string_view hex = kHashA) {
  return std::string(path) + "=" + std::string(hex) + "\n";
}

Result<Manifest> ParseText(std::string_view text) { return Manifest::Parse(AsBytes(text)); }

// Parses `text`, expects kCorrupt, and returns the message.
std::string CorruptMessage(std::string_view text) {
  Result<Manifest> m = ParseText(text);
  REQUIRE_FALSE(m.ok());
  CHECK(m.status().code() == StatusCode::kCorrupt);
  CHECK_THAT(m.status().message(), Catch::StartsWith("MANIFEST line "));
  return m.status().message();
}

Digest D(char fill) { return *ParseHex(std::string(64, fill)); }

}  // namespace

TEST_CASE("manifest: accepts a valid manifest", "[manifest]") {
  std::string text = Line("carton.toml") + Line("model/model.pt", kHashB) +
                     Line("model/sub dir/x=y.bin") + Line("tensor_data/index.toml");
  Result<Manifest> m = ParseText(text);
  REQUIRE(m.ok());
  REQUIRE(m->size() == 4);
  CHECK(m->entries()[1].path == "model/model.pt");
  CHECK(m->entries()[1].sha256 == D('b'));
  CHECK(m->entries()[2].path == "model/sub dir/x=y.bin");
}

TEST_CASE("manifest: the spec's example lines parse", "[manifest]") {
  const std::string text =
      "carton.toml=712f4a7aa03b1ba5ac4e6c3ee90ec2ece4cc2f78470d7ef40dda9e96e356ad4a\n"
      "model/model.pt=e550f6224a5133f597d823ab4590f369e0b20e3c6446488225fc6f7a372b9fe2\n";
  Result<Manifest> m = ParseText(text);
  REQUIRE(m.ok());
  const ManifestEntry* e = m->Find("model/model.pt");
  REQUIRE(e != nullptr);
  CHECK(ToHex(e->sha256) == "e550f6224a5133f597d823ab4590f369e0b20e3c6446488225fc6f7a372b9fe2");
  CHECK(m->Serialize() == text);
}

TEST_CASE("manifest: empty input is a manifest with no entries", "[manifest]") {
  Result<Manifest> m = ParseText("");
  REQUIRE(m.ok());
  CHECK(m->empty());
  CHECK(m->Serialize().empty());
}

TEST_CASE("manifest: a path may contain '=' (lines split at the last one)", "[manifest]") {
  Result<Manifest> m = ParseText(Line("a=b=c"));
  REQUIRE(m.ok());
  CHECK(m->entries()[0].path == "a=b=c");
  CHECK(m->entries()[0].sha256 == D('a'));
}

TEST_CASE("manifest: rejects a line without '='", "[manifest][corrupt]") {
  CHECK_THAT(CorruptMessage(Line("a") + kHashA + "\n"),
             Catch::Contains("line 2: no \"=\" between path and sha256"));
}

TEST_CASE("manifest: rejects uppercase hex", "[manifest][corrupt]") {
  std::string upper = kHashA;
  upper[10] = 'A';
  CHECK_THAT(CorruptMessage(Line("a", upper)),
             Catch::Contains("line 1: sha256 \"" + upper + "\" has uppercase hex digits"));
}

TEST_CASE("manifest: rejects a sha256 that is not 64 hex digits", "[manifest][corrupt]") {
  CHECK_THAT(CorruptMessage(Line("a", kHashA.substr(1))),
             Catch::Contains("is not 64 lowercase hex digits (63 bytes)"));
  CHECK_THAT(CorruptMessage(Line("a", kHashA + "0")),
             Catch::Contains("is not 64 lowercase hex digits (65 bytes)"));
  CHECK_THAT(CorruptMessage(Line("a", std::string(64, 'g'))),
             Catch::Contains("is not 64 lowercase hex digits"));
  CHECK_THAT(CorruptMessage(Line("a", "")), Catch::Contains("(0 bytes)"));
}

TEST_CASE("manifest: rejects a last line without a newline", "[manifest][corrupt]") {
  std::string text = Line("a") + "b=" + kHashA;
  CHECK_THAT(CorruptMessage(text), Catch::Contains("line 2: last line does not end with \"\\n\""));
}

TEST_CASE("manifest: rejects CRLF line endings", "[manifest][corrupt]") {
  std::string text = "a=" + kHashA + "\r\n";
  CHECK_THAT(CorruptMessage(text), Catch::Contains("line 1: line ends with \"\\r\\n\""));
}

TEST_CASE("manifest: rejects spaces around '=' and after the sha256", "[manifest][corrupt]") {
  CHECK_THAT(CorruptMessage("a =" + kHashA + "\n"), Catch::Contains("line 1: space before \"=\""));
  CHECK_THAT(CorruptMessage("a= " + kHashA + "\n"), Catch::Contains("line 1: space after \"=\""));
  CHECK_THAT(CorruptMessage("a=" + kHashA + " \n"),
             Catch::Contains("line 1: space after the sha256"));
  CHECK_THAT(CorruptMessage(" a=" + kHashA + "\n"), Catch::Contains("begins or ends with a space"));
}

TEST_CASE("manifest: rejects an empty line", "[manifest][corrupt]") {
  CHECK_THAT(CorruptMessage(Line("a") + "\n" + Line("b")), Catch::Contains("line 2: empty line"));
}

TEST_CASE("manifest: rejects paths out of order", "[manifest][corrupt]") {
  std::string text = Line("a") + Line("c") + Line("b");
  CHECK(CorruptMessage(text) == "MANIFEST line 3: paths not sorted: \"b\" after \"c\"");
  // Byte order, not case-insensitive or locale order: "B" (0x42) < "a" (0x61).
  CHECK_THAT(CorruptMessage(Line("a") + Line("B")), Catch::Contains("paths not sorted"));
  // '.' (0x2e) < '/' (0x2f): "a.b" sorts before "a/b".
  CHECK_THAT(CorruptMessage(Line("a/b") + Line("a.b")), Catch::Contains("paths not sorted"));
  CHECK(ParseText(Line("a.b") + Line("a/b")).ok());
}

TEST_CASE("manifest: rejects a duplicate path", "[manifest][corrupt]") {
  std::string text = Line("a") + Line("b") + Line("b", kHashB);
  CHECK(CorruptMessage(text) == "MANIFEST line 3: duplicate path \"b\"");
}

TEST_CASE("manifest: rejects an empty path", "[manifest][corrupt]") {
  CHECK(CorruptMessage(Line("")) == "MANIFEST line 1: empty path");
}

TEST_CASE("manifest: rejects '..' components", "[manifest][corrupt]") {
  CHECK_THAT(CorruptMessage(Line("model/../x")),
             Catch::Contains("line 1: path \"model/../x\": component \"..\" is not allowed"));
  CHECK_THAT(CorruptMessage(Line("..")), Catch::Contains("component \"..\" is not allowed"));
}

TEST_CASE("manifest: rejects '.' components", "[manifest][corrupt]") {
  CHECK_THAT(CorruptMessage(Line("./a")), Catch::Contains("component \".\" is not allowed"));
  CHECK_THAT(CorruptMessage(Line("a/./b")), Catch::Contains("component \".\" is not allowed"));
}

TEST_CASE("manifest: rejects empty components", "[manifest][corrupt]") {
  CHECK_THAT(CorruptMessage(Line("a//b")),
             Catch::Contains("line 1: path \"a//b\": empty component"));
}

TEST_CASE("manifest: rejects a leading '/'", "[manifest][corrupt]") {
  CHECK_THAT(CorruptMessage(Line("/etc/passwd")), Catch::Contains("begins with \"/\""));
}

TEST_CASE("manifest: rejects a trailing '/'", "[manifest][corrupt]") {
  CHECK_THAT(CorruptMessage(Line("model/")), Catch::Contains("ends with \"/\""));
}

TEST_CASE("manifest: rejects backslashes", "[manifest][corrupt]") {
  CHECK_THAT(CorruptMessage(Line("model\\x")),
             Catch::Contains("path \"model\\\\x\": backslash at byte 5"));
}

TEST_CASE("manifest: rejects NUL and control characters", "[manifest][corrupt]") {
  using namespace std::string_literals;
  CHECK_THAT(CorruptMessage(Line("a\0b"s)),
             Catch::Contains("path \"a\\x00b\": control character 0x00 at byte 1"));
  CHECK_THAT(CorruptMessage(Line("a\tb")), Catch::Contains("control character 0x09"));
  CHECK_THAT(CorruptMessage(Line("a\x7f")), Catch::Contains("control character 0x7f"));
  CHECK_THAT(CorruptMessage(Line("a\rb")), Catch::Contains("control character 0x0d"));
}

TEST_CASE("manifest: rejects paths that are not utf-8", "[manifest][corrupt]") {
  CHECK_THAT(CorruptMessage(Line("a\xff")),
             Catch::Contains("path \"a\\xff\": not valid utf-8 at byte 1"));
  CHECK_THAT(CorruptMessage(Line("\xc0\xaf")), Catch::Contains("not valid utf-8"));  // overlong
  CHECK_THAT(CorruptMessage(Line("\xed\xa0\x80")),
             Catch::Contains("not valid utf-8"));                                    // surrogate
  CHECK_THAT(CorruptMessage(Line("\xe2\x82")), Catch::Contains("not valid utf-8"));  // cut short
}

TEST_CASE("manifest: rejects components that begin or end with a space", "[manifest][corrupt]") {
  CHECK_THAT(CorruptMessage(Line("a /b")),
             Catch::Contains("component \"a \" begins or ends with a space"));
}

TEST_CASE("manifest: rejects over-long paths and components", "[manifest][corrupt]") {
  // Components of 200 bytes up to exactly 1,024 bytes in all.
  std::string path;
  while (path.size() + 201 <= kMaxPathBytes) path += std::string(200, 'a') + "/";
  path += std::string(kMaxPathBytes - path.size(), 'b');
  REQUIRE(path.size() == kMaxPathBytes);
  CHECK(ParseText(Line(path)).ok());
  CHECK_THAT(CorruptMessage(Line(path + "b")),
             Catch::Contains("1025 bytes, more than the limit of 1024"));
  // A 59 KB path of short components: refused here, as unpack would fail.
  std::string deep;
  while (deep.size() < 59000) deep += "dir/";
  CHECK_THAT(CorruptMessage(Line(deep + "x")), Catch::Contains("more than the limit of 1024"));
  CHECK(ParseText(Line(std::string(kMaxComponentBytes, 'c'))).ok());
  CHECK_THAT(CorruptMessage(Line("model/" + std::string(kMaxComponentBytes + 1, 'c'))),
             Catch::Contains("a component of 256 bytes, more than the limit of 255"));
}

TEST_CASE("manifest: rejects listing MANIFEST", "[manifest][corrupt]") {
  CHECK_THAT(CorruptMessage(Line("MANIFEST") + Line("a")),
             Catch::Contains("line 1: \"MANIFEST\" is listed"));
}

TEST_CASE("manifest: rejects listing LINKS", "[manifest][corrupt]") {
  CHECK_THAT(CorruptMessage(Line("LINKS")), Catch::Contains("line 1: \"LINKS\" is listed"));
  // Only the top-level names are reserved.
  CHECK(ParseText(Line("model/LINKS") + Line("model/MANIFEST")).ok());
}

TEST_CASE("manifest: Serialize and Parse round trip", "[manifest]") {
  Result<Manifest> m = Manifest::FromEntries({{"z", D('1')},
                                              {"model/model.pt", D('2')},
                                              {"carton.toml", D('3')},
                                              {"misc/\xc3\xa9t\xc3\xa9.png", D('4')}});
  REQUIRE(m.ok());
  std::string text = m->Serialize();
  CHECK(text == Line("carton.toml", std::string(64, '3')) +
                    Line("misc/\xc3\xa9t\xc3\xa9.png", std::string(64, '4')) +
                    Line("model/model.pt", std::string(64, '2')) + Line("z", std::string(64, '1')));
  Result<Manifest> back = ParseText(text);
  REQUIRE(back.ok());
  CHECK(*back == *m);
  CHECK(back->Serialize() == text);
}

TEST_CASE("manifest: the manifest hash is the sha256 of the serialized bytes", "[manifest]") {
  Result<Manifest> m = Manifest::FromEntries({{"carton.toml", D('a')}, {"model/x", D('b')}});
  REQUIRE(m.ok());
  CHECK(m->Hash() == Sha256Of(AsBytes(m->Serialize())));
  CHECK(ToHex(Manifest().Hash()) ==
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

TEST_CASE("manifest: FromEntries sorts by bytes", "[manifest]") {
  Result<Manifest> m = Manifest::FromEntries({{"a/b", D('1')},
                                              {"a", D('2')},
                                              {"\xc3\xa9", D('3')},
                                              {"a.b", D('4')},
                                              {"B", D('5')},
                                              {"a0", D('6')}});
  REQUIRE(m.ok());
  std::vector<std::string> paths;
  for (const auto& e : m->entries()) paths.push_back(e.path);
  // 'B' 0x42 < 'a' 0x61; '.' 0x2e < '/' 0x2f < '0' 0x30; 0xc3 above ASCII.
  CHECK(paths == std::vector<std::string>{"B", "a", "a.b", "a/b", "a0", "\xc3\xa9"});
}

TEST_CASE("manifest: FromEntries rejects duplicates, bad and reserved paths", "[manifest]") {
  Result<Manifest> dup = Manifest::FromEntries({{"b", D('1')}, {"a", D('2')}, {"b", D('3')}});
  REQUIRE_FALSE(dup.ok());
  CHECK(dup.status().code() == StatusCode::kInvalidArgument);
  CHECK(dup.status().message() == "duplicate path \"b\"");

  Result<Manifest> bad = Manifest::FromEntries({{"a/../b", D('1')}});
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().code() == StatusCode::kInvalidArgument);
  CHECK_THAT(bad.status().message(), Catch::Contains("component \"..\""));

  Result<Manifest> reserved = Manifest::FromEntries({{"LINKS", D('1')}});
  REQUIRE_FALSE(reserved.ok());
  CHECK(reserved.status().code() == StatusCode::kInvalidArgument);
  CHECK_THAT(reserved.status().message(), Catch::Contains("\"LINKS\" may not be listed"));
}

TEST_CASE("manifest: Find looks paths up exactly", "[manifest]") {
  Result<Manifest> m = Manifest::FromEntries({{"a", D('1')}, {"a/b", D('2')}, {"c", D('3')}});
  REQUIRE(m.ok());
  REQUIRE(m->Find("a/b") != nullptr);
  CHECK(m->Find("a/b")->sha256 == D('2'));
  CHECK(m->Find("c") != nullptr);
  CHECK(m->Find("a/") == nullptr);
  CHECK(m->Find("b") == nullptr);
  CHECK(m->Find("d") == nullptr);
  CHECK(Manifest().Find("a") == nullptr);
}

TEST_CASE("manifest: ValidateEntryPath accepts ordinary paths", "[manifest]") {
  for (const char* p : {"carton.toml", "model/model.pt", "a=b", "dir with space/x y.bin",
                        "\xc3\xa9/\xf0\x9f\x98\x80", "...", "a..b/.hidden", "model/MANIFEST"}) {
    INFO(p);
    CHECK(ValidateEntryPath(p).ok());
  }
  Status s = ValidateEntryPath("a//b");
  CHECK(s.code() == StatusCode::kInvalidArgument);
  CHECK(s.message() == "path \"a//b\": empty component (\"//\")");
}

TEST_CASE("manifest: a file whose sha256 is not MANIFEST's gets the one message",
          "[manifest][corrupt]") {
  const Digest a = Sha256Of(AsBytes("a")), b = Sha256Of(AsBytes("b"));
  CHECK(CheckDigest("model/w.bin", a, a).ok());
  const Status s = CheckDigest("model/w.bin", a, b);
  CHECK(s.code() == StatusCode::kCorrupt);
  CHECK(s.message() == "model/w.bin: sha256 " + ToHex(a) + " but MANIFEST says " + ToHex(b));
  CHECK(DigestMismatch(a, b) == "sha256 " + ToHex(a) + " but MANIFEST says " + ToHex(b));
}
