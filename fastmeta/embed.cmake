# Writes the bytes of IN as a C++ array (fastmeta/library.h) to OUT.
file(READ ${IN} hex HEX)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
string(REGEX REPLACE "((0x..,){32})" "\\1\n" bytes "${bytes}")
file(WRITE ${OUT} "#include \"fastmeta/library.h\"\nnamespace sentry {\nconst unsigned char kFastMetaLibrary[] = {\n${bytes}\n};\nconst unsigned long kFastMetaLibrarySize = sizeof(kFastMetaLibrary);\n}  // namespace sentry\n")
