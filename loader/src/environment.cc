#include "carton/loader/environment.h"

#include "carton/oci/source.h"

namespace carton::loader {

Result<Environment> DefaultEnvironment() {
  Environment environment;
  oci::AddOciSource(environment);
  return environment;
}

}  // namespace carton::loader
