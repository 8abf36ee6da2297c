// Force-included after SimGrid's smpi_helpers.h (which smpicxx force-includes) in a simulation build
// (cmake/smpi-toolchain.cmake). smpi_helpers.h turns exit into a function-like macro, exit(x) -> smpi_exit(x), so
// that a rank leaving does not end the whole simulation; that macro breaks any declaration or call of a member
// named exit with other than one argument (CLI11's App::exit(error, out, err)). The object-like macro below keeps
// the redirection for calls (::exit, std::exit: SimGrid declares smpi_exit in both namespaces) and renames
// members named exit consistently in every translation unit, which is all a member needs.
#pragma once
#ifdef exit
#undef exit
#define exit smpi_exit
#endif

// A simulation build: the trainer's clock is the simulated one (trainers/core/clock.hpp says why) and datasets are
// shared read-only mappings (model/dataset.hpp).
#define GRADSYNC_SIMULATED 1
