// tune: the command line (SPEC section 1).
#include <CLI/CLI.hpp>

int main(int argc, char** argv) {
  CLI::App app{"tune: hyperparameter tuning for LoRA fine-tuning"};
  app.require_subcommand(1);
  CLI11_PARSE(app, argc, argv);
  return 0;
}
