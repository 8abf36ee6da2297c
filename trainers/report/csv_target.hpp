#pragma once
// The start-up check of a CSV file train appends to, so that a run that cannot write its rows is refused before it
// trains rather than after.
#include <string>

namespace gradsync {

// "" when rows under `header` can be appended to the CSV file `path` (given by `flag`, e.g. "--csv"): a new file in
// a directory that takes it, an empty file, or one whose first line is `header`. Otherwise one line naming the flag
// and the path and why: the OS's reason it cannot be opened or created, or that its header differs from `header`
// (with both column counts). Touches nothing: a file it creates to find out is removed again.
std::string csv_target_problem(const std::string& flag, const std::string& path, const std::string& header);

}  // namespace gradsync
