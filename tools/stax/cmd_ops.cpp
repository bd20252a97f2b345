// stax ops: the op registry of this build, one op overload a line, so that tools (the OpInfo
// harness, tests/aten/) find which ops exist by asking the registry rather than a hard-coded list.
//   stax ops            SCHEMA                                   (the schema text as registered)
//   stax ops --tsv      NAME <TAB> CATEGORY <TAB> grad|nograd <TAB> SCHEMA
//   stax ops --complex  only the ops that take complex tensors (OpDef::complex; either form)
#include <iostream>
#include <memory>

#include "core/graph/op_registry.h"
#include "tools/stax/command.h"

namespace stax::cli {

Subcommand make_ops_command(CLI::App& parent) {
  auto tsv = std::make_shared<bool>(false);
  auto complex = std::make_shared<bool>(false);
  CLI::App* sub = parent.add_subcommand(
      "ops", "List the registered op overloads with their (aten) schemas");
  sub->add_flag("--tsv", *tsv,
                "One line per op: name, category, grad|nograd (has a derivative), schema, "
                "separated by tabs");
  sub->add_flag("--complex", *complex,
                "Only the ops that take complex64 / complex128 tensors (docs/complex.md)");
  return {sub, [tsv, complex] {
            for (const OpDef* d : default_registry().all()) {
              if (*complex && !d->complex) continue;
              if (*tsv)
                std::cout << d->name() << '\t' << category_name(d->category) << '\t'
                          << (d->differentiable ? "grad" : "nograd") << '\t' << d->schema.text
                          << '\n';
              else
                std::cout << d->schema.text << '\n';
            }
            return 0;
          }};
}

}  // namespace stax::cli
