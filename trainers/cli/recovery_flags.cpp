#include "trainers/cli/recovery_flags.hpp"

#include <fmt/format.h>

#include <string>

#include "trainers/config/recovery_options.hpp"

namespace gradsync {

void add_recovery_options(CLI::App& app, TrainConfig& c) {
  app.add_option_function<std::string>(
         "--recover",
         [&c](const std::string& text) {
           const std::optional<Recover> r = find_recover(text);
           if (!r)
             throw CLI::ValidationError("--recover",
                                        fmt::format("unknown recovery '{}' (choose auto, inplace, abort)", text));
           c.recover = *r;
         },
         "a lost process: inplace re-forms the run over the survivors (a ULFM MPI started with mpirun --with-ft "
         "ulfm); abort ends the job (scripts/elastic.sh relaunches it from checkpoints); auto: inplace where the MPI "
         "and the family can")
      ->default_str("auto");
  app.add_flag("--respawn", c.respawn,
               "with in-place recovery: start a successor for every lost rank (MPI_Comm_spawn), which takes the model "
               "and its share of the data, so that the run goes on at its size");
}

}  // namespace gradsync
