// Notices: one-line notes from library code for whoever runs the program
// (a fallback taken, say: "the server ignores range requests; downloading
// it whole"), which are neither errors nor progress.
//
// By default a notice is written to stderr as "carton: <text>". A program
// installs its own sink once (the Python package turns notices into Python
// warnings); an empty sink drops them. Thread-safety: every function may
// be called from any thread; the sink may be called from several at once.
#pragma once

#include <functional>
#include <string_view>

namespace carton {

using NoticeFn = std::function<void(std::string_view text)>;

// Replaces the sink; returns the previous one (at first, the one writing
// to stderr), which may be installed again later.
NoticeFn SetNoticeSink(NoticeFn sink);

// Hands `text` (one line, no newline) to the sink.
void Notice(std::string_view text);

}  // namespace carton
