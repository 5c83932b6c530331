// A known call chain for the Java frames test: main -> outer -> middle -> leaf,
// leaf burning CPU.  The JIT inlines what it likes (middle into outer): the
// agent names inlined stretches by their scope.
public class EmberChain {
    static volatile long sink;

    static long leaf(long n) {
        long s = 0;
        for (long i = 0; i < n; i++)
            s = (s * 31 + i) % 1000003;
        return s;
    }

    static long middle(long n) { return leaf(n) + 1; }

    static long outer(long n) { return middle(n) + 1; }

    public static void main(String[] args) {
        long end = System.nanoTime() + Long.parseLong(args[0]) * 1000000000L;
        long loops = 0;
        while (System.nanoTime() < end) {
            sink += outer(200000);
            loops++;
        }
        System.out.println(loops);
    }
}
