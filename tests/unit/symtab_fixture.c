/* An unstripped shared object with known functions: the ground truth of the
 * ELF symbol reader's tests (test_elf_symbols.cpp), which compare its symbol
 * table with where the dynamic loader put these functions. Built twice, the
 * second time with FT_SYMTAB_OTHER (other code: another GNU build-id). */
static int ft_symtab_hidden(int x) { return x * 3 + 1; }

int ft_symtab_alpha(int x) { return x + 7; }

int ft_symtab_beta(int x) {
#ifdef FT_SYMTAB_OTHER
  return x * 11;
#else
  return x - ft_symtab_alpha(x) * 2;
#endif
}

/* The static function's address: the test finds it in the loaded object. */
void* ft_symtab_hidden_ptr(void) { return (void*)ft_symtab_hidden; }
