// Text made valid UTF-8 for what `tune` prints.
//
// What a trial prints is kept as it is in the database, bytes that are not
// UTF-8 included (a Latin-1 "caf\xe9"). What `tune` prints for people and
// programs (tables, CSV, progress lines) is UTF-8, as its JSON is
// (DumpJson, json_text.h): each ill-formed sequence shows as U+FFFD.
#ifndef TUNE_CORE_UTF8_H_
#define TUNE_CORE_UTF8_H_

#include <string>
#include <string_view>

namespace tune {

// `text` with every ill-formed UTF-8 sequence replaced by U+FFFD, one per
// maximal subpart (as Unicode recommends, Python's errors="replace" does
// and DumpJson writes it): a lone continuation byte, a lead byte whose
// sequence breaks off, an overlong form, a surrogate, a code point above
// U+10FFFF. Valid text comes back unchanged, NUL and control characters
// included.
std::string ValidUtf8(std::string_view text);

}  // namespace tune

#endif  // TUNE_CORE_UTF8_H_
