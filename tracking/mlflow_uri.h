// MlflowUri: a tracking URI (experiment.json's tracking.mlflow.tracking_uri,
// MLFLOW_TRACKING_URI, `tune export mlflow --tracking-uri`) taken apart and
// checked once, so that `tune validate` refuses what `tune run` could not
// use, and no credential written into a URI is ever printed or stored.
//
//   http[s]://[user[:password]@]host[:port][/path]
//
// host: a name (letters, digits, - . _ ~), an IPv4 address or [an IPv6
// address]; port: 1 to 65535 (default 80 or 443); no query, fragment or
// whitespace. user and password are percent-decoded.
#pragma once

#include <string>

#include "core/status.h"

namespace tune::tracking {

struct MlflowUri {
  std::string scheme;  // "http" or "https" (lower case)
  std::string host;    // as written; an IPv6 address without its brackets
  int port = 0;        // 1-65535: as written, else 80 (http) or 443 (https)
  bool port_written = false;
  std::string path;    // "" or "/prefix" without a trailing slash
  bool has_userinfo = false;  // user[:password]@ was written
  std::string username, password;  // decoded; empty when not written

  // scheme://host[:port][path], without the credentials: the only form
  // of the URI that is printed or stored.
  std::string WithoutCredentials() const;
  // Whether the host is this machine (localhost, 127.0.0.0/8, ::1).
  bool IsLoopback() const;
};

// Parses `text`. InvalidArgument whose message is what was expected, as a
// phrase ("a port from 1 to 65535 after the host ..."), for the caller to
// put after "<field>: expected " and before ", got <MaskCredentials(text)>".
// Never throws.
Result<MlflowUri> ParseMlflowUri(const std::string& text);

// `text` with anything between "://" (or the start) and the last '@' of
// the authority replaced by "***": for quoting a URI that did not parse.
std::string MaskCredentials(const std::string& text);

}  // namespace tune::tracking
