"""check_oms_schema.py SCHEMA_DIR BUNDLE...: validates OMS bundles against the
OMS v1.0 JSON schemas (bundle.schema.json, and statement.schema.json for the
decoded payload, which the bundle schema cannot see inside base64), with
Debian's python3-jsonschema. Prints "valid BUNDLE" or "invalid BUNDLE: ..."
per bundle; exits 0 when every one is valid, 1 otherwise, 2 without
jsonschema."""
import base64
import json
import pathlib
import sys

try:
    import jsonschema
except ImportError:
    print("no jsonschema module (apt-get install python3-jsonschema)")
    sys.exit(2)


def main():
    schema_dir = pathlib.Path(sys.argv[1])
    schemas = {}
    for name in ("bundle", "envelope", "statement", "predicate"):
        schema = json.loads((schema_dir / f"{name}.schema.json").read_text())
        schemas[schema["$id"]] = schema
    resolver_store = dict(schemas)
    bundle_schema = schemas["https://model_signing/bundle/v1.0/schema"]
    statement_schema = schemas["https://model_signing/statement/v1.0/schema"]
    cls = jsonschema.validators.validator_for(bundle_schema)
    ok = True
    for path in sys.argv[2:]:
        try:
            bundle = json.loads(pathlib.Path(path).read_text())
            for schema, value in ((bundle_schema, bundle), (statement_schema, None)):
                if value is None:
                    value = json.loads(base64.b64decode(bundle["dsseEnvelope"]["payload"]))
                resolver = jsonschema.RefResolver.from_schema(schema, store=resolver_store)
                cls(schema, resolver=resolver).validate(value)
            print(f"valid {path}")
        except Exception as e:  # noqa: BLE001 - every failure is a verdict
            ok = False
            print(f"invalid {path}: {str(e).splitlines()[0][:300]}")
    sys.exit(0 if ok else 1)


main()
