# Warnings are errors in our own code; generated TableGen code is included by our
# sources, so a few warnings it trips are silenced explicitly.
function(ls2c_target_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Werror
    -Wno-unused-parameter)
endfunction()
