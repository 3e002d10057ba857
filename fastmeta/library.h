// The bytes of libfastmeta.so (preload.c), built with the sentry.
#ifndef SENTRY_FASTMETA_LIBRARY_H_
#define SENTRY_FASTMETA_LIBRARY_H_

namespace sentry {

extern const unsigned char kFastMetaLibrary[];
extern const unsigned long kFastMetaLibrarySize;

}  // namespace sentry

#endif  // SENTRY_FASTMETA_LIBRARY_H_
