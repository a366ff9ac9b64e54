# INTERFACE target carrying sqlock's own warning and sanitizer flags. Linked PRIVATE into our
# targets only, so consumers never inherit them.
add_library(sqlock_warnings INTERFACE)
target_compile_options(sqlock_warnings INTERFACE
    -Wall -Wextra -Wpedantic -Wshadow -Wconversion -Wsign-conversion -Wnon-virtual-dtor
    -Wold-style-cast -Woverloaded-virtual -Wnull-dereference -Wimplicit-fallthrough
    $<$<BOOL:${SQLOCK_WERROR}>:-Werror>)

if(SQLOCK_SANITIZE STREQUAL "address")
    set(sqlock_san_flags -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer)
elseif(SQLOCK_SANITIZE STREQUAL "thread")
    set(sqlock_san_flags -fsanitize=thread -fno-omit-frame-pointer)
elseif(NOT SQLOCK_SANITIZE STREQUAL "")
    message(FATAL_ERROR "SQLOCK_SANITIZE must be empty, 'address' or 'thread'")
endif()
if(sqlock_san_flags)
    # Global, so the library, CLI and tests agree on the instrumented runtime.
    add_compile_options(${sqlock_san_flags})
    add_link_options(${sqlock_san_flags})
endif()
