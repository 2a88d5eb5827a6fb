// Placeholder translation unit so the module links before its sources land.
namespace carton::links {
int LinksModuleVersion() { return 1; }
}  // namespace carton::links
