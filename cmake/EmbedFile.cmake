# attest_embed_file(SRC OUT SYMBOL): writes OUT, a header defining
#   static const unsigned char SYMBOL[] (the bytes of SRC plus a terminating 0) and SYMBOL_size.
# Re-runs at configure time whenever SRC changes.
function(attest_embed_file src out symbol)
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${src})
  file(READ ${src} hex HEX)
  string(LENGTH "${hex}" hex_len)
  math(EXPR size "${hex_len} / 2")
  string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
  set(content "/* Generated from ${src} by cmake/EmbedFile.cmake. */\n")
  string(APPEND content "static const unsigned char ${symbol}[] = {${bytes}0x00};\n")
  string(APPEND content "static const unsigned long ${symbol}_size = ${size}ul;\n")
  file(CONFIGURE OUTPUT ${out} CONTENT "${content}")
endfunction()
