# cmake -DINPUT=report.html -DOUTPUT=report_template.h -P embed.cmake
# Writes a header holding INPUT's bytes (edgemon::report::kTemplate), so that
# the edgemon command carries report.html in its binary (static ones too).
file(READ "${INPUT}" hex HEX)
string(LENGTH "${hex}" digits)
math(EXPR bytes "${digits} / 2")
# 32 bytes a line.
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," body "${hex}")
string(REGEX REPLACE "((0x..,){32})" "\\1\n" body "${body}")
get_filename_component(name "${INPUT}" NAME)
file(WRITE "${OUTPUT}"
  "// Generated from ${name} by client/report/embed.cmake: do not edit.\n"
  "#pragma once\n#include <cstddef>\n\n"
  "namespace edgemon::report {\n"
  "inline constexpr unsigned char kTemplate[] = {\n${body}\n0};\n"
  "inline constexpr std::size_t kTemplateSize = ${bytes};\n"
  "}  // namespace edgemon::report\n")
