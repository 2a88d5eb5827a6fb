#include "carton/format/data_type.h"

#include <catch2/catch.hpp>

using namespace carton;

TEST_CASE("carton data types: names round-trip and map to safetensors", "[carton]") {
  for (DataType t : AllDataTypes()) {
    CHECK(ParseDataType(DataTypeName(t)) == t);
    auto st = ToSafetensorsDtype(t);
    if (t == DataType::kString) {
      CHECK_FALSE(st.has_value());
      CHECK(DataTypeSize(t) == 0);
    } else {
      REQUIRE(st.has_value());
      CHECK(FromSafetensorsDtype(*st) == t);
      CHECK(safetensors::DtypeBits(*st) == 8 * DataTypeSize(t));
    }
  }
  CHECK_FALSE(ParseDataType("float16").has_value());
  CHECK_FALSE(ParseDataType("Float32").has_value());
  CHECK_FALSE(FromSafetensorsDtype(safetensors::Dtype::kBF16).has_value());
}
