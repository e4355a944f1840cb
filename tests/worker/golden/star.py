from os import *

def f(p):
    return remove(p)

def g():
    return len([])
