// A shared library that is not a Stax plugin: it exports no `stax_plugin_api`.
extern "C" __attribute__((visibility("default"))) int stax_not_a_plugin() { return 42; }
