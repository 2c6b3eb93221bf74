fn main() {
    use z3::ast::Bool;
    let s = z3::Solver::new();
    let a = Bool::new_const("a");
    let b = Bool::new_const("b");
    s.assert(&a.implies(&b));
    s.assert(&a);
    println!("{:?}", s.check());
    let m = s.get_model().unwrap();
    println!("{:?}", m.eval(&b, true));
    println!("{:?}", s.check_assumptions(&[b.not()]));
}
