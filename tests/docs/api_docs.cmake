# The api_docs test: runs doxygen over the public headers with the project's Doxyfile (which has
# WARN_IF_UNDOCUMENTED and WARN_AS_ERROR = FAIL_ON_WARNINGS) and fails on any warning it
# prints, such as an undocumented public declaration, or on a non-zero exit. Writes its HTML to
# its own directory, so that it never clobbers what the `docs` target built.
#   cmake -DDOXYGEN=<doxygen> -DDOXYFILE=<build>/docs/Doxyfile -DWORK=<dir> -P api_docs.cmake
foreach(var DOXYGEN DOXYFILE WORK)
    if(NOT DEFINED ${var})
        message(FATAL_ERROR "api_docs: -D${var}=... is required")
    endif()
endforeach()

file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}")
file(WRITE "${WORK}/Doxyfile"
     "@INCLUDE = \"${DOXYFILE}\"\nOUTPUT_DIRECTORY = \"${WORK}\"\nQUIET = YES\nWARN_LOGFILE =\n")

execute_process(COMMAND "${DOXYGEN}" "${WORK}/Doxyfile"
                RESULT_VARIABLE status
                OUTPUT_VARIABLE out
                ERROR_VARIABLE err)
string(STRIP "${err}" err)
if(NOT status EQUAL 0 OR NOT err STREQUAL "")
    string(REGEX MATCHALL "[^\n]*: (warning|error): [^\n]*" warnings "${err}")
    list(LENGTH warnings count)
    foreach(text IN ITEMS "${out}" "${err}")
        if(NOT text STREQUAL "")
            message("${text}")
        endif()
    endforeach()
    message(FATAL_ERROR "api_docs: doxygen exited with ${status} and printed ${count} warning(s) "
                        "(above). Every public declaration in include/sqlock/*.hpp needs a /// "
                        "comment; see docs/Doxyfile.in.")
endif()
message(STATUS "api_docs: the API reference builds without a warning")
