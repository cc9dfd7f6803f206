/* Test library B: the definition of gk_probe() that comes after A's. */
char gk_probe(void);
int gk_dlnext_b_loaded(void);

char gk_probe(void)
{
	return 'B';
}

/* Referenced by the program so that the linker keeps B as a dependency. */
int gk_dlnext_b_loaded(void)
{
	return 1;
}
