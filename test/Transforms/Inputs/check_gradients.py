#!/usr/bin/env python3
"""Checks ls2-autodiff's output against its input (used by autodiff-models.test).

    check_gradients.py BEFORE.mlir AFTER.mlir

BEFORE is the module with @forward; AFTER is the same module after
ls2-autodiff, both printed by ls2c-opt. Checks that @forward is unchanged
and that @forward_backward takes @forward's arguments (types and attributes)
and then loss_grad (the seed of backward),
and returns the loss, then one gradient per "parameter" argument in argument
order, typed like it and named after it. Prints one summary line, or the
first mismatch on stderr with exit status 1.
"""
import re
import sys

ARG = re.compile(r'%arg\d+: (tensor<[^>]*>) \{([^}]*)\}')
RESULT = re.compile(r'(tensor<[^>]*>) \{([^}]*)\}')


def attrs(text):
    return dict(re.findall(r'([\w.]+) = ("[^"]*"|\w+)', text))


def function(module, name):
    """The text of func.func @name, from its line to its closing brace."""
    lines = module.splitlines()
    for i, line in enumerate(lines):
        if re.match(r'\s*func\.func @%s\(' % name, line):
            indent = len(line) - len(line.lstrip())
            for j in range(i + 1, len(lines)):
                if lines[j] == ' ' * indent + '}':
                    return lines[i:j + 1]
    return None


def fail(message):
    sys.stderr.write('check_gradients: ' + message + '\n')
    sys.exit(1)


def main():
    before = open(sys.argv[1]).read()
    after = open(sys.argv[2]).read()
    forward = function(before, 'forward')
    if forward is None:
        fail('no @forward in ' + sys.argv[1])
    if function(after, 'forward') != forward:
        fail('@forward changed')
    fb = function(after, 'forward_backward')
    if fb is None:
        fail('no @forward_backward')
    signature = fb[0]
    args_text, results_text = signature.split(') -> (', 1)
    args = ARG.findall(args_text)
    seed = ('tensor<f32>', 'ls2.kind = "input", ls2.name = "loss_grad"')
    if not args or args[-1] != seed:
        fail('the last argument of @forward_backward is not loss_grad: %r'
             % (args[-1:],))
    args = args[:-1]
    if ARG.findall(forward[0].split(') -> ', 1)[0]) != args:
        fail('@forward_backward arguments, but the trailing loss_grad, '
             'differ from @forward')
    results = RESULT.findall(results_text)
    if not results or results[0][0] != 'tensor<f32>' or \
            attrs(results[0][1]).get('ls2.kind') != '"loss"':
        fail('result 0 is not the loss: %r' % (results[:1],))
    params = [(t, attrs(a)['ls2.name']) for t, a in args
              if attrs(a).get('ls2.kind') == '"parameter"']
    grads = results[1:]
    if len(grads) != len(params):
        fail('%d gradients for %d parameters' % (len(grads), len(params)))
    for i, ((ptype, pname), (gtype, gattrs)) in enumerate(zip(params, grads)):
        g = attrs(gattrs)
        if g.get('ls2.kind') != '"gradient"' or g.get('ls2.name') != pname:
            fail('result %d is %s, not the gradient of %s' % (i + 1, gattrs, pname))
        if gtype != ptype:
            fail('gradient of %s is %s, not %s' % (pname, gtype, ptype))
    print('@forward unchanged; @forward_backward returns the loss and %d '
          'gradients, one per parameter, named and typed like it'
          % len(grads))


if __name__ == '__main__':
    main()
