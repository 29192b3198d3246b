# cmake -DINPUT=file -DOUTPUT=header.h -DNAMESPACE=edgemon::x -DNAME=kFile -P embed.cmake
# Writes a header holding INPUT's bytes as NAMESPACE::NAME (NUL-terminated)
# and NAME##Size, so that a binary carries the file (static ones too): the
# record report's template (client/report) and the live page (daemon/web).
foreach(var INPUT OUTPUT NAMESPACE NAME)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "embed.cmake: -D${var}=... is required")
  endif()
endforeach()

# Hex digits as a C array body, 32 bytes a line; sets out_body, out_bytes.
function(embed_hex hex out_body out_bytes)
  string(LENGTH "${hex}" digits)
  math(EXPR bytes "${digits} / 2")
  string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," body "${hex}")
  string(REGEX REPLACE "((0x..,){32})" "\\1\n" body "${body}")
  set(${out_body} "${body}" PARENT_SCOPE)
  set(${out_bytes} "${bytes}" PARENT_SCOPE)
endfunction()

file(READ "${INPUT}" hex HEX)
embed_hex("${hex}" body bytes)
get_filename_component(name "${INPUT}" NAME)
set(text "// Generated from ${name} by cmake/embed.cmake: do not edit.\n")
string(APPEND text "#pragma once\n#include <cstddef>\n\nnamespace ${NAMESPACE} {\n")
string(APPEND text "inline constexpr unsigned char ${NAME}[] = {\n${body}\n0};\n")
string(APPEND text "inline constexpr std::size_t ${NAME}Size = ${bytes};\n")
string(APPEND text "}  // namespace ${NAMESPACE}\n")
file(WRITE "${OUTPUT}" "${text}")
