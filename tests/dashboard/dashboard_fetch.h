// Get: one GET to a `tune dashboard` on 127.0.0.1, its status, its JSON body
// (when it answered JSON) and its ETag, for the dashboard API tests.
#pragma once

#include <httplib.h>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <string>

namespace tune::dashboard_test {

struct Fetched {
  int status = 0;
  nlohmann::json body;  // null unless the answer was application/json
  std::string etag;
};

inline Fetched Get(int port, const std::string& path, const httplib::Headers& headers = {}) {
  httplib::Client client("127.0.0.1", port);
  auto res = client.Get(path.c_str(), headers);
  REQUIRE(res);
  Fetched f;
  f.status = res->status;
  f.etag = res->get_header_value("ETag");
  if (res->get_header_value("Content-Type") == "application/json; charset=utf-8") {
    f.body = nlohmann::json::parse(res->body);
  }
  return f;
}

}  // namespace tune::dashboard_test
